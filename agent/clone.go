package agent

// Clone is a new Agent with a's provider, store, tools and settings, for a
// caller that changes some settings for one turn (the HTTP API's per-turn
// model and limits) without touching a, which other turns use. The
// window a provider's refusal stated carries over, and so do the packs a
// has unpacked (a turn of a clone reads its conversation as a's do);
// what else a keeps to spare work (tool definitions, conversation
// records) does not, and is read again.
func (a *Agent) Clone() *Agent {
	c := &Agent{
		Provider:            a.Provider,
		Store:               a.Store,
		Tools:               a.Tools,
		Env:                 a.Env,
		Model:               a.Model,
		System:              a.System,
		MaxTokens:           a.MaxTokens,
		ContextWindow:       a.ContextWindow,
		Context:             a.Context,
		MaxRounds:           a.MaxRounds,
		MaxTurnTokens:       a.MaxTurnTokens,
		MaxCost:             a.MaxCost,
		MaxConversationCost: a.MaxConversationCost,
		Pricer:              a.Pricer,
		ToolTimeout:         a.ToolTimeout,
		Wait:                a.Wait,
		KeepRequests:        a.KeepRequests,
		Lease:               a.Lease,
		RefusalGuard:        a.RefusalGuard,
		DropUnreached:       a.DropUnreached,
		Gate:                a.Gate,
		RetryFor:            a.RetryFor,
	}
	c.stated.Store(a.stated.Load())
	c.packs.Store(a.packsOf())
	c.pacing = a.pacing
	return c
}
