package main

import (
	"errors"
	"flag"
	"fmt"
	"math"

	"github.com/myelin-run/myelin/agent"
)

// budgetFlags are the turn budgets of run, chat and serve (serve's are its
// turns' defaults, which a turn's body may change): agent.Agent's
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
	if (b.cost > 0 || b.convCost > 0) && pricer == nil {
		return errors.New("--max-cost and --max-conversation-cost need a price table, which this build of myelin has not: leave them out")
	}
	return nil
}

// pricer is where the cost budgets get their prices: the price table,
// once the build has one (package price's Table, issue 31); nil until
// then, and a cost budget is refused saying so.
var pricer func() (agent.Pricer, error)

// apply sets the budgets on a, with a pricer when a cost budget is set.
func (b *budgetFlags) apply(a *agent.Agent) error {
	a.MaxTurnTokens, a.MaxCost, a.MaxConversationCost = b.turnTokens, b.cost, b.convCost
	if b.cost == 0 && b.convCost == 0 {
		return nil
	}
	p, err := pricer()
	if err != nil {
		return fmt.Errorf("reading the prices for --max-cost: %w", err)
	}
	a.Pricer = p
	return nil
}
