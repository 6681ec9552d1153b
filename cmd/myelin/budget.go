package main

import (
	"flag"
	"fmt"
	"math"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/price"
)

// budgetFlags are the turn budgets of run, chat and serve (serve's are its
// turns' bounds, which a turn's body may lower, not raise): agent.Agent's
// MaxTurnTokens, MaxCost and MaxConversationCost.
type budgetFlags struct {
	turnTokens     int
	cost, convCost float64
}

func (b *budgetFlags) add(fs *flag.FlagSet) {
	fs.IntVar(&b.turnTokens, "max-turn-tokens", 0, "the most tokens `N` one turn may use, input (cached or not) and output of all its requests; a request that would cross it is not sent and the turn ends (default: no bound)")
	fs.Float64Var(&b.cost, "max-cost", 0, "the most one turn may cost, in `USD`, priced by the price table; a request that would cross it is not sent and the turn ends (default: no bound)")
	fs.Float64Var(&b.convCost, "max-conversation-cost", 0, "the most the conversation may cost in all, this turn included, in `USD` (default: no bound)")
}

// check refuses a budget that is not a bound (below 0, not a number)
// and a cost budget with no prices to hold it.
func (b *budgetFlags) check() error {
	if b.turnTokens < 0 {
		return fmt.Errorf("--max-turn-tokens %d: give the most tokens of a turn, 1 or more, or 0 for no bound", b.turnTokens)
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"max-cost", b.cost}, {"max-conversation-cost", b.convCost}} {
		if c.v < 0 || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return fmt.Errorf("--%s %v: give an amount in US dollars above 0 (such as 0.50), or 0 for no bound", c.name, c.v)
		}
	}
	return nil
}

// pricer, when set (by a test), is where the cost budgets get their
// prices instead of the session's price table (--prices over the
// built-in one, docs/cost.md).
var pricer func() (agent.Pricer, error)

// apply sets the budgets on a, and prices (the session's table) as its
// Pricer, so that a cost budget a turn brings (serve's API) is priced too.
// A model the table does not price is the agent's to refuse, when a turn
// with a cost budget starts, saying so.
func (b *budgetFlags) apply(a *agent.Agent, prices *price.Table) error {
	a.MaxTurnTokens, a.MaxCost, a.MaxConversationCost = b.turnTokens, b.cost, b.convCost
	a.Pricer = prices
	if pricer == nil || (b.cost == 0 && b.convCost == 0) {
		return nil
	}
	p, err := pricer()
	if err != nil {
		return fmt.Errorf("reading the prices for --max-cost: %w", err)
	}
	a.Pricer = p
	return nil
}
