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

import (
	"fmt"

	"github.com/myelin-run/myelin/history"
)

// Model is the price of one model, in US dollars per million tokens.
type Model struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead is the price of input read from the prompt cache.
	CacheRead float64 `json:"cache_read"`
	// CacheWrite and CacheWrite1h are the prices of input written to the
	// prompt cache with the five-minute and the one-hour lifetime
	// (CacheWrite alone where a provider has one lifetime). A
	// CacheWrite1h of 0 means the table has no such price: a usage with
	// one-hour writes then costs "unknown".
	CacheWrite   float64 `json:"cache_write"`
	CacheWrite1h float64 `json:"cache_write_1h,omitempty"`
	// LongAbove and Long, when set, are a second tier: a request whose
	// prompt (input, cache reads and cache writes) is longer than
	// LongAbove tokens is priced wholly at Long (Gemini 2.5 Pro, Claude
	// Sonnet 4 with the 1M window). Long has no tier of its own.
	LongAbove int    `json:"long_above,omitempty"`
	Long      *Model `json:"long,omitempty"`
	// Note says what a reader of the table should know of the price (an
	// assumption to check, what it does not tell apart); it prices
	// nothing.
	Note string `json:"note,omitempty"`
}

// Cost is what a usage costs, in US dollars. Known is false when the
// model is not in the table: the cost is then unknown, and Dollars 0 must
// not be shown as a price.
//
// A sum (Sum, Add) is Known only when every part is; its Dollars are then
// the sum of the parts that are known, at least what they cost together,
// and Why says why the first unknown part is.
type Cost struct {
	Dollars float64
	Known   bool
	// Why is, on an unknown cost, why it is unknown ("model X not in the
	// price table"); "" on a known one.
	Why string
	// Some is, on an unknown sum, whether any of its parts was known:
	// Dollars is then a lower bound ("at least $X"), else nothing.
	Some bool
}

// Sum is the cost of all of cs together: known when each is (the sum of
// no costs is a known $0).
func Sum(cs ...Cost) Cost {
	if len(cs) == 0 {
		return Cost{Known: true}
	}
	s := cs[0]
	for _, c := range cs[1:] {
		s = s.Add(c)
	}
	return s
}

// Add is c and d together: known when both are; else Dollars holds the
// known part and Why the first reason.
func (c Cost) Add(d Cost) Cost {
	s := Cost{Dollars: c.Dollars + d.Dollars, Known: c.Known && d.Known}
	if !s.Known {
		s.Some = c.Known || c.Some || d.Known || d.Some
		s.Why = c.Why
		if s.Why == "" {
			s.Why = d.Why
		}
	}
	return s
}

// String is the cost as the CLI shows it: "$0.0123" when known; "at least
// $0.0123 (why)" when part of a sum is unknown and the known part costs
// something; "cost unknown (why)" else. It never shows an unknown cost as $0.
func (c Cost) String() string {
	switch {
	case c.Known:
		return Dollars(c.Dollars)
	case c.Some && c.Dollars > 0:
		return fmt.Sprintf("at least %s (%s)", Dollars(c.Dollars), c.Why)
	}
	return fmt.Sprintf("cost unknown (%s)", c.Why)
}

// Dollars is d as the CLI writes a price: four decimals under $10
// ("$0.0123"), cents above ("$12.35"), and "under $0.0001" for a cost too
// small to show in four decimals that is not 0.
func Dollars(d float64) string {
	switch {
	case d > 0 && d < 0.00005:
		return "under $0.0001"
	case d >= 10:
		return fmt.Sprintf("$%.2f", d)
	}
	return fmt.Sprintf("$%.4f", d)
}

// Cost is what usage u, one request's, costs at m's prices. A usage with
// one-hour cache writes costs "unknown" when m has no price for them.
func (m Model) Cost(u history.Usage) Cost {
	p := m
	if m.Long != nil && m.LongAbove > 0 && u.Input+u.CacheRead+u.CacheWrite > m.LongAbove {
		p = *m.Long
	}
	if u.CacheWrite1h > 0 && p.CacheWrite1h == 0 {
		return Cost{Why: "no price for one-hour cache writes in the price table"}
	}
	perM := float64(u.Input)*p.Input + float64(u.Output)*p.Output + float64(u.CacheRead)*p.CacheRead +
		float64(u.CacheWrite-u.CacheWrite1h)*p.CacheWrite + float64(u.CacheWrite1h)*p.CacheWrite1h
	return Cost{Dollars: perM / 1e6, Known: true}
}

// JSON is a cost as the JSON of myelin's API and `history show --json`
// give it: usd when known, at_least_usd when part of a sum is unknown and
// the known part costs something, why when it is not known. An unknown
// cost has no usd: it is never written as 0.
type JSON struct {
	USD     *float64 `json:"usd,omitempty"`
	AtLeast *float64 `json:"at_least_usd,omitempty"`
	Known   bool     `json:"known"`
	Why     string   `json:"why,omitempty"`
}

// JSON is c as the API writes it (see type JSON).
func (c Cost) JSON() *JSON {
	d := c.Dollars
	j := &JSON{Known: c.Known, Why: c.Why}
	switch {
	case c.Known:
		j.USD = &d
	case c.Some && d > 0:
		j.AtLeast = &d
	}
	return j
}
