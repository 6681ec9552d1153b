// Package price owns what tokens cost in dollars (issue 31): a table of
// prices per model — input, output, cache reads, cache writes by their
// lifetime — kept as data in the repository with its date and source,
// which a user's file may override, and the cost of a request's usage
// (history.Usage) under it. A model the table does not know costs
// "unknown", never 0.
//
// It must not send requests, count tokens or decide budgets: it prices
// what others counted (the agent's budgets, the CLI's token line, the API
// and the inspector ask it).
package price

// Model is the price of one model, in US dollars per million tokens.
type Model struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead is the price of input read from the prompt cache.
	CacheRead float64 `json:"cache_read"`
	// CacheWrite and CacheWrite1h are the prices of input written to the
	// prompt cache with the five-minute and the one-hour lifetime
	// (CacheWrite alone where a provider has one lifetime).
	CacheWrite   float64 `json:"cache_write"`
	CacheWrite1h float64 `json:"cache_write_1h,omitempty"`
}

// Cost is what a usage costs, in US dollars. Known is false when the
// model is not in the table: the cost is then unknown, and Dollars 0 must
// not be shown as a price.
type Cost struct {
	Dollars float64
	Known   bool
}
