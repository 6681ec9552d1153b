package agent

import (
	"errors"
	"fmt"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/window"
)

// Pricer prices a request's usage under a model: what the agent's cost
// budgets (Agent.MaxCost, Agent.MaxConversationCost) ask. *price.Table
// is one. It must say Known false for a model it has no price for, never
// price it at 0.
type Pricer interface {
	Cost(model string, u history.Usage) price.Cost
}

// BudgetReached is the Reason of a turn that a budget ended
// (Agent.MaxTurnTokens, MaxCost, MaxConversationCost): before a request
// whose estimate would cross it, or after an answer that reached it.
const BudgetReached = "budget"

// BudgetMarker begins the text of the assistant message stored when a
// budget stops a turn before a request (budgetStop): the model reads it in
// later requests, and people in the history, so both know why the turn
// stopped there.
const BudgetMarker = "[the turn stopped here, before its next request, because it reached its budget: "

// tokensOf is every token a usage counts: input, cached or not, and
// output (CacheWrite1h is part of CacheWrite).
func tokensOf(u history.Usage) int {
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// budget is what a turn may spend and what the conversation had spent
// before it (begin reads it once a turn, from the stored history).
type budget struct {
	tokens         int
	cost, convCost float64
	pricer         Pricer
	model          string
	// before is the conversation's cost before the turn began: what is
	// stored, less what a continued turn had used of it
	before float64
	// last is the usage of the last answer, whose cached prefix the
	// next request reads again (estimate)
	last history.Usage
}

// set is whether any budget is set.
func (b *budget) set() bool { return b.tokens > 0 || b.cost > 0 || b.convCost > 0 }

// newBudget reads a's budgets for a turn of a conversation whose stored
// messages are stored and whose turn so far used start (a continued
// turn's, or nothing). It fails, so that the turn does not start, for a
// budget that cannot be held: a negative one, a cost budget with no
// Pricer, or a model — the turn's, or one that answered before in the
// conversation, under a conversation budget — with no price.
func (a *Agent) newBudget(stored []history.Message, start history.Usage) (budget, error) {
	b := budget{tokens: a.MaxTurnTokens, cost: a.MaxCost, convCost: a.MaxConversationCost, pricer: a.Pricer, model: a.Model}
	if b.tokens < 0 || b.cost < 0 || b.convCost < 0 {
		return b, fmt.Errorf("a budget below 0 (max turn tokens %d, max cost $%g, max conversation cost $%g): give a positive bound, or 0 for none", b.tokens, b.cost, b.convCost)
	}
	b.last = lastUsage(stored)
	if b.cost == 0 && b.convCost == 0 {
		return b, nil
	}
	if b.pricer == nil {
		return b, errors.New("a cost budget is set but the agent has no Pricer to price its requests: set Agent.Pricer, or drop the cost budget")
	}
	if !b.pricer.Cost(b.model, history.Usage{Input: 1}).Known {
		return b, fmt.Errorf("the model %s has no price, so a cost budget cannot be held: add its price (a price file), or drop the cost budget", b.model)
	}
	if b.convCost > 0 {
		spent, err := conversationCost(b.pricer, b.model, stored)
		if err != nil {
			return b, err
		}
		b.before = spent - b.price(start)
	}
	return b, nil
}

// conversationCost is what the answers, summaries and refused answers
// stored in msgs cost, each priced under the model that the settings
// stored before it name (model before any). It fails for one whose model
// has no price.
func conversationCost(p Pricer, model string, msgs []history.Message) (float64, error) {
	var sum float64
	add := func(u *history.Usage) error {
		if u == nil {
			return nil
		}
		c := p.Cost(model, *u)
		if !c.Known {
			return fmt.Errorf("the conversation has answers from the model %s, which has no price, so its cost budget cannot be held: add its price (a price file), or drop the conversation's cost budget", model)
		}
		sum += c.Dollars
		return nil
	}
	for _, m := range msgs {
		if m.Settings != nil && m.Settings.Model != "" {
			model = m.Settings.Model
		}
		var err error
		switch {
		case m.Role == history.Assistant:
			err = add(m.Usage)
		case m.Edit != nil && m.Edit.Summary != nil:
			err = add(m.Edit.Summary.Usage)
		case m.Edit != nil && m.Edit.Refusal != nil:
			err = add(m.Edit.Refusal.Usage)
		}
		if err != nil {
			return 0, err
		}
	}
	return sum, nil
}

// lastUsage is the usage of the last answer in msgs with one.
func lastUsage(msgs []history.Message) history.Usage {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == history.Assistant && m.Usage != nil {
			return *m.Usage
		}
	}
	return history.Usage{}
}

// price is what u costs under the turn's model; 0 with no Pricer.
func (b *budget) price(u history.Usage) float64 {
	if b.pricer == nil {
		return 0
	}
	return b.pricer.Cost(b.model, u).Dollars
}

// estimate is the usage a request of size tokens is expected to have
// before its answer: the part of it the last request had in the prompt
// cache (its cache reads and writes) read from the cache, the rest written
// to it — the dearer of input and a cache write — so that a warm cache is
// not priced as new input ten times over, and new input not below what it
// may cost. Its output is not known before: it is not counted.
func (b *budget) estimate(size int) (cached, fresh history.Usage) {
	read := min(max(size, 0), b.last.CacheRead+b.last.CacheWrite)
	rest := max(size, 0) - read
	return history.Usage{CacheRead: read}, history.Usage{Input: rest}
}

// estimatedCost prices estimate(size).
func (b *budget) estimatedCost(size int) float64 {
	cached, fresh := b.estimate(size)
	write := history.Usage{CacheWrite: fresh.Input}
	return b.price(cached) + max(b.price(fresh), b.price(write))
}

// beforeRequest says why a request of size tokens (window.Count.Tokens, the
// estimate of its input) is not to be sent by a turn that has used used:
// the used tokens with the estimate would cross the token budget, or the
// cost so far with the estimate's would cross a cost budget. "" sends it.
func (b *budget) beforeRequest(used history.Usage, size window.Count) string {
	if !b.set() {
		return ""
	}
	if b.tokens > 0 && tokensOf(used)+size.Tokens > b.tokens {
		return fmt.Sprintf("the turn has used %d tokens and its next request is estimated at about %d tokens of input, over its budget of %d tokens", tokensOf(used), size.Tokens, b.tokens)
	}
	if b.cost == 0 && b.convCost == 0 {
		return ""
	}
	spent, next := b.price(used), b.estimatedCost(size.Tokens)
	if b.cost > 0 && spent+next > b.cost {
		return fmt.Sprintf("the turn has cost $%.4f and its next request's input is estimated at $%.4f, over its budget of $%.4f", spent, next, b.cost)
	}
	if conv := b.before + spent; b.convCost > 0 && conv+next > b.convCost {
		return fmt.Sprintf("the conversation has cost $%.4f and the turn's next request's input is estimated at $%.4f, over its budget of $%.4f", conv, next, b.convCost)
	}
	return ""
}

// afterAnswer says which budget a turn that has used used has reached
// (used it all, or more); "" when none.
func (b *budget) afterAnswer(used history.Usage) string {
	if !b.set() {
		return ""
	}
	if b.tokens > 0 && tokensOf(used) >= b.tokens {
		return fmt.Sprintf("the turn has used %d tokens of its budget of %d", tokensOf(used), b.tokens)
	}
	spent := b.price(used)
	if b.cost > 0 && spent >= b.cost {
		return fmt.Sprintf("the turn has cost $%.4f of its budget of $%.4f", spent, b.cost)
	}
	if conv := b.before + spent; b.convCost > 0 && conv >= b.convCost {
		return fmt.Sprintf("the conversation has cost $%.4f of its budget of $%.4f", conv, b.convCost)
	}
	return ""
}

// budgetStop ends the turn before a request, for why (beforeRequest): an
// assistant message saying so is stored — the conversation stays valid,
// and the next turn's model reads why this one stopped — and nothing is
// sent.
func (t *turning) budgetStop(why string) error {
	m := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: BudgetMarker + why + "; the user can continue the conversation with a larger budget]"}}}
	if err := t.store(t.kept, m); err != nil {
		return err
	}
	t.on(Event{Kind: Notice, Text: "the turn stopped before its next request: " + why + "; continue the conversation with a larger budget to go on"})
	t.tr.Reason, t.tr.Text = BudgetReached, ""
	return nil
}

// overBudgetCalls ends a turn whose answer m (with calls of them to run)
// reached a budget (why: afterAnswer): its calls are answered, so the
// conversation stays valid, but not run.
func (t *turning) overBudgetCalls(m history.Message, calls int, why string) error {
	if err := t.answerUnrun(m, calls, "the turn reached its budget ("+why+"), so these calls were not run; the user can continue the conversation with a larger budget to go on"); err != nil {
		return err
	}
	t.on(Event{Kind: Notice, Text: "the turn stopped: " + why + "; continue the conversation with a larger budget to go on"})
	t.tr.Reason = BudgetReached
	return nil
}
