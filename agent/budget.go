package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/provider"
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
	// ttl is the wire's cache lifetime (provider.CacheTTL): "1h" prices
	// an estimate's cache writes at the one-hour price
	ttl string
	// before is the conversation's cost before the turn began: what is
	// stored, less what a continued turn had used of it
	before float64
	// spent is the turn's cost: each request's usage priced on its own
	// (a long-prompt tier is a request's, not the turn's sum), added as
	// the answers come; unknown, with why, once one could not be priced.
	// priced is the usage spent holds: what the turn used beyond it (a
	// summary request's, counted in fit) is priced as one request at the
	// next check (catchUp).
	spent  price.Cost
	priced history.Usage
	// last is the usage of the last answer, whose cached prefix the
	// next request reads again (estimate) when warm: the answer was
	// stored within the cache's lifetime and nothing changed the
	// conversation's prefix since
	last history.Usage
	warm bool
	// sub is what the turn's subagents spent (Spending.Charge); nil for
	// a budget made in a test
	sub *subSpent
}

// subSpent is what a turn's subagents spent, each request's usage priced
// on its own at its model: their calls add to it while the turn waits for
// its round, several at once.
type subSpent struct {
	mu     sync.Mutex
	tokens int
	cost   price.Cost
}

// subagents is what b's subagents spent so far: tokens, and their cost
// (a known $0 when none).
func (b *budget) subagents() (int, price.Cost) {
	if b.sub == nil {
		return 0, price.Cost{Known: true}
	}
	b.sub.mu.Lock()
	defer b.sub.mu.Unlock()
	return b.sub.tokens, b.sub.cost
}

// spentSoFar is the turn's cost so far: its own requests' (spent) and
// its subagents'.
func (b *budget) spentSoFar() price.Cost {
	_, sub := b.subagents()
	return b.spent.Add(sub)
}

// spendingKey is the key of a turn's Spending in its context, which the
// tool calls it runs inherit.
type spendingKey struct{}

// Spending is a running turn's budgets as a tool call of it sees them
// (SpendingOf): what remains of them, and where a subagent's requests are
// charged. Package delegate runs a subagent under what remains (its own
// MaxTurnTokens and MaxCost) and charges each of its requests to the turn
// as its usage comes; the turn counts them at its next check, and ends as
// over budget when they crossed it. It must not be kept past the call.
type Spending struct {
	b *budget
	// up is the Spending of the turn whose call started this one's
	// conversation (a subagent's subagent): charged too
	up *Spending
}

// withSpending is ctx with the Spending of the turn whose budgets are b.
func withSpending(ctx context.Context, b *budget) context.Context {
	up, _ := ctx.Value(spendingKey{}).(*Spending)
	return context.WithValue(ctx, spendingKey{}, &Spending{b: b, up: up})
}

// SpendingOf is the Spending of the turn whose tool call runs under ctx;
// nil outside a turn.
func SpendingOf(ctx context.Context) *Spending {
	s, _ := ctx.Value(spendingKey{}).(*Spending)
	return s
}

// Left is what remains of the turn's budgets now, for a subagent to
// spend: tokens, and US dollars (the lesser of what its turn's and its
// conversation's cost budgets leave); 0 for one the turn has not. why
// says which budget is spent, or why its cost cannot be told, when
// nothing remains of one; "" else.
func (s *Spending) Left() (tokens int, cost float64, why string) {
	b := s.b
	subTokens, _ := b.subagents()
	if b.tokens > 0 {
		used := tokensOf(b.priced) + subTokens
		if tokens = b.tokens - used; tokens <= 0 {
			return 0, 0, fmt.Sprintf("has used %d tokens of its budget of %d, its subagents' included", used, b.tokens)
		}
	}
	if !b.costs() {
		return tokens, 0, ""
	}
	spent := b.spentSoFar()
	if !spent.Known {
		return 0, 0, b.unpriced("a request of the turn", spent)
	}
	left := func(limit, spent float64) {
		if l := limit - spent; limit > 0 && (cost == 0 || l < cost) {
			cost = l
		}
	}
	left(b.cost, spent.Dollars)
	left(b.convCost, b.before+spent.Dollars)
	if cost <= 0 {
		return 0, 0, fmt.Sprintf("has cost $%.4f, its subagents' included, and nothing remains of its cost budget", spent.Dollars)
	}
	return tokens, cost, ""
}

// Pricer is what the turn prices its requests with: a subagent held to
// what remains of its cost budget prices its own the same way.
func (s *Spending) Pricer() Pricer { return s.b.pricer }

// Charge adds u, the usage of one request a subagent made to model, to
// what the turn spent — and to what each turn it runs under spent (a
// subagent's subagent is charged to its caller's caller too) — priced on
// its own. Safe for several calls at once.
func (s *Spending) Charge(model string, u history.Usage) {
	for ; s != nil; s = s.up {
		b := s.b
		if b.sub == nil {
			continue
		}
		c := price.Cost{Known: true}
		if b.costs() && b.pricer != nil {
			c = b.pricer.Cost(model, u)
		}
		b.sub.mu.Lock()
		b.sub.tokens += tokensOf(u)
		b.sub.cost = b.sub.cost.Add(c)
		b.sub.mu.Unlock()
	}
}

// set is whether any budget is set.
func (b *budget) set() bool { return b.tokens > 0 || b.cost > 0 || b.convCost > 0 }

// costs is whether a cost budget is set: only then are requests priced.
func (b *budget) costs() bool { return b.cost > 0 || b.convCost > 0 }

// CheckBudgets says why a's budgets cannot be held, before any turn: a
// budget below 0, or a cost budget with no Pricer, a model it has no
// price for, or — when the wire writes the one-hour cache — no price for
// that. A turn checks them as it starts; a server checks a turn's own
// budgets with it before taking the turn. nil when they can be held.
func (a *Agent) CheckBudgets() error {
	if a.MaxTurnTokens < 0 || a.MaxCost < 0 || a.MaxConversationCost < 0 {
		return fmt.Errorf("a budget below 0 (max turn tokens %d, max cost $%g, max conversation cost $%g): give a positive bound, or 0 for none", a.MaxTurnTokens, a.MaxCost, a.MaxConversationCost)
	}
	if a.MaxCost == 0 && a.MaxConversationCost == 0 {
		return nil
	}
	if a.Pricer == nil {
		return errors.New("a cost budget is set but the agent has no Pricer to price its requests: set Agent.Pricer, or drop the cost budget")
	}
	if c := a.Pricer.Cost(a.Model, history.Usage{Input: 1}); !c.Known {
		return fmt.Errorf("the model %s has no price (%s), so a cost budget cannot be held: add its price (a price file), or drop the cost budget", a.Model, c.Why)
	}
	if provider.CacheTTL(a.Provider) == "1h" {
		if c := a.Pricer.Cost(a.Model, history.Usage{CacheWrite: 1, CacheWrite1h: 1}); !c.Known {
			return fmt.Errorf("the wire writes the prompt cache with the one-hour lifetime (--cache-ttl 1h) but the model %s has no price for it (%s), so a cost budget cannot be held: add cache_write_1h to its price (a price file), use the five-minute lifetime, or drop the cost budget", a.Model, c.Why)
		}
	}
	return nil
}

// newBudget reads a's budgets for a turn of a conversation stored as st
// (read whole, From 0, when a cost budget is set) and whose turn so far used start (a continued
// turn's, or nothing), at now. It fails, so that the turn does not start,
// for a budget that cannot be held: a negative one, a cost budget with
// no Pricer, or a model — the turn's, or one that answered before in the
// conversation, under a conversation budget — with no price, or with no
// price for the one-hour cache writes the wire makes (--cache-ttl 1h).
func (a *Agent) newBudget(st *readState, start history.Usage, now time.Time) (budget, error) {
	b := budget{tokens: a.MaxTurnTokens, cost: a.MaxCost, convCost: a.MaxConversationCost, pricer: a.Pricer, model: a.Model,
		ttl: provider.CacheTTL(a.Provider), spent: price.Cost{Known: true}, priced: start, sub: &subSpent{cost: price.Cost{Known: true}}}
	if err := a.CheckBudgets(); err != nil {
		return b, err
	}
	b.last, b.warm = lastCachedOf(&st.tail, b.ttl, now)
	if !b.costs() {
		return b, nil
	}
	if st.tail.From() > 0 {
		return b, fmt.Errorf("a cost budget prices every stored answer, but the conversation was read from place %d on", st.tail.From())
	}
	stored := st.tail.Messages() // From 0: the whole list
	all, turn, err := conversationCost(b.pricer, b.model, stored)
	switch {
	case err != nil && b.convCost > 0:
		return b, err
	case err != nil:
		// the turn's budget alone does not price the turns before
		all = 0
		if _, turn, err = conversationCost(b.pricer, b.model, stored[turnStart(stored):]); err != nil {
			return b, err
		}
	}
	if start == (history.Usage{}) {
		turn = 0 // a new turn: the answers after the last prompt are the turn before's
	}
	// a continued turn's answers so far, each priced on its own
	b.spent.Dollars, b.before = turn, all-turn
	return b, nil
}

// turnStart is the index of the last prompt in msgs (a user message that
// is not tool results); 0 when none.
func turnStart(msgs []history.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == history.User && !m.HoldsResults() {
			return i
		}
	}
	return 0
}

// conversationCost is what the answers, summaries and refused answers
// stored in msgs cost, each request priced on its own, as
// price.ConversationAt prices them (the one definition: history show and
// the API give the same), under the model that the settings stored with
// it or before it name — model when the conversation stored none; turn is
// what the answers after the last prompt cost (a continued turn's so far,
// as continuingOf counts its usage). It fails for one whose cost is
// unknown, saying why.
func conversationCost(p Pricer, model string, msgs []history.Message) (all, turn float64, err error) {
	priced := price.ConversationAt(p, model, msgs)
	for _, tr := range priced.Turns {
		for _, r := range tr.Requests {
			if !r.Cost.Known {
				return 0, 0, fmt.Errorf("the conversation has a request to the model %s that cannot be priced (%s), so its cost budget cannot be held: add its price (a price file), or drop the conversation's cost budget", r.Model, r.Cost.Why)
			}
		}
	}
	if n := len(priced.Turns); n > 0 && priced.Turns[n-1].Prompt >= 0 {
		for _, r := range priced.Turns[n-1].Requests {
			if r.Kind == "answer" {
				turn += r.Cost.Dollars
			}
		}
	}
	return priced.Cost.Dollars, turn, nil
}

// lastCachedOf is the usage of the last answer in t with one, and
// whether its cached prefix is still warm at now: the answer was stored
// within the cache's lifetime (ttl "1h", else five minutes) and no
// context record (a clearing, a summary) was stored after it, which
// would change the prefix the next request sends.
func lastCachedOf(t *window.Tail, ttl string, now time.Time) (history.Usage, bool) {
	life := 5 * time.Minute
	if ttl == "1h" {
		life = time.Hour
	}
	for i := t.End() - 1; i >= t.From(); i-- {
		m := t.At(i)
		if m.IsRecord() {
			for j := i - 1; j >= t.From(); j-- {
				if a := t.At(j); a.Role == history.Assistant && a.Usage != nil {
					return *a.Usage, false
				}
			}
			return history.Usage{}, false
		}
		if withUsage(m) {
			return *m.Usage, !m.Time.IsZero() && now.Sub(m.Time) < life
		}
	}
	return history.Usage{}, false
}

// answered counts u, an answer's usage, in the turn: priced on its own.
// The answer's prefix is now in the cache.
func (b *budget) answered(u history.Usage) {
	b.last, b.warm = u, true
	b.charge(u)
}

// charge adds what u, one request's usage, costs to the turn's cost.
func (b *budget) charge(u history.Usage) {
	b.priced.Add(u)
	if b.costs() && b.pricer != nil {
		b.spent = b.spent.Add(b.pricer.Cost(b.model, u))
	}
}

// catchUp prices what the turn used, used, beyond what was priced, as
// one request: a summary request's usage, which fit counts in the turn.
func (b *budget) catchUp(used history.Usage) {
	d := history.Usage{Input: used.Input - b.priced.Input, Output: used.Output - b.priced.Output, CacheRead: used.CacheRead - b.priced.CacheRead,
		CacheWrite: used.CacheWrite - b.priced.CacheWrite, CacheWrite1h: used.CacheWrite1h - b.priced.CacheWrite1h}
	if d.Input > 0 || d.Output > 0 || d.CacheRead > 0 || d.CacheWrite > 0 {
		b.charge(d)
	}
}

// unpriced is the reason a turn ends when a request of it could not be
// priced: its cost budget cannot be held, and an unknown cost is never
// counted as 0.
func (b *budget) unpriced(what string, c price.Cost) string {
	return fmt.Sprintf("the cost of %s could not be priced (%s), so its cost budget cannot be held", what, c.Why)
}

// estimate is the usage a request of size tokens is expected to have
// before its answer, as one request: the part of it the last request had
// in the prompt cache (its cache reads and writes) read from the cache
// when that is still warm, the rest written to it (with the one-hour
// lifetime when the wire writes so). Its output is not known before: it
// is not counted.
func (b *budget) estimate(size int) history.Usage {
	size = max(size, 0)
	read := 0
	if b.warm {
		read = min(size, b.last.CacheRead+b.last.CacheWrite)
	}
	u := history.Usage{CacheRead: read, CacheWrite: size - read}
	if b.ttl == "1h" {
		u.CacheWrite1h = u.CacheWrite
	}
	return u
}

// estimatedCost prices estimate(size) as one request, so that a
// long-prompt tier applies as it would to the request: its new part at
// the dearer of a cache write and input, so that new input is not priced
// below what it may cost.
func (b *budget) estimatedCost(size int) price.Cost {
	u := b.estimate(size)
	write := b.pricer.Cost(b.model, u)
	input := b.pricer.Cost(b.model, history.Usage{CacheRead: u.CacheRead, Input: u.CacheWrite})
	if !write.Known || !input.Known || write.Dollars >= input.Dollars {
		return write
	}
	return input
}

// beforeRequest says why a request of size tokens (window.Count.Tokens, the
// estimate of its input) is not to be sent by a turn that has used used:
// the used tokens with the estimate would cross the token budget, or the
// cost so far with the estimate's would cross a cost budget, or a cost
// could not be priced. "" sends it.
func (b *budget) beforeRequest(used history.Usage, size window.Count) string {
	if !b.set() {
		return ""
	}
	b.catchUp(used)
	subTokens, _ := b.subagents()
	if n := tokensOf(used) + subTokens; b.tokens > 0 && n+size.Tokens > b.tokens {
		return fmt.Sprintf("the turn has used %d tokens%s and its next request is estimated at about %d tokens of input, over its budget of %d tokens", n, theirs(subTokens), size.Tokens, b.tokens)
	}
	if !b.costs() {
		return ""
	}
	all := b.spentSoFar()
	if !all.Known {
		return b.unpriced("a request of the turn", all)
	}
	next := b.estimatedCost(size.Tokens)
	if !next.Known {
		return b.unpriced("the turn's next request", next)
	}
	spent := all.Dollars
	if b.cost > 0 && spent+next.Dollars > b.cost {
		return fmt.Sprintf("the turn has cost $%.4f and its next request's input is estimated at $%.4f, over its budget of $%.4f", spent, next.Dollars, b.cost)
	}
	if conv := b.before + spent; b.convCost > 0 && conv+next.Dollars > b.convCost {
		return fmt.Sprintf("the conversation has cost $%.4f and the turn's next request's input is estimated at $%.4f, over its budget of $%.4f", conv, next.Dollars, b.convCost)
	}
	return ""
}

// theirs is ", N of them its subagents'" for n subagents' tokens above
// 0, "" else.
func theirs(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them its subagents')", n)
}

// budgetStop is the error of a request that a budget kept from being
// sent below the turn's own check (a summary request, fit's; the resend
// of a request refused as too long): the turn ends as before any request
// (turning.budgetStop), why its reason.
type budgetStop struct{ why string }

func (e *budgetStop) Error() string { return "the turn reached its budget: " + e.why }

// budgetStopped is why err, or an error it wraps, is a budgetStop; "" when
// it is none.
func budgetStopped(err error) string {
	var stop *budgetStop
	if errors.As(err, &stop) {
		return stop.why
	}
	return ""
}

// beforeSummary is beforeRequest for a summary request of size (its
// messages' estimate) by a turn that has used used: a *budgetStop when it
// is not to be sent. A nil b (a sizing with no turn: no budgets) checks
// nothing.
func (b *budget) beforeSummary(used history.Usage, size window.Count) error {
	if b == nil {
		return nil
	}
	if why := b.beforeRequest(used, size); why != "" {
		return &budgetStop{why: "its context needed a summary, and " + why}
	}
	return nil
}

// afterAnswer says which budget a turn that has used used has reached
// (used it all, or more), or that a request's cost could not be priced
// under a cost budget; "" when none.
func (b *budget) afterAnswer(used history.Usage) string {
	if !b.set() {
		return ""
	}
	b.catchUp(used)
	subTokens, _ := b.subagents()
	if n := tokensOf(used) + subTokens; b.tokens > 0 && n >= b.tokens {
		return fmt.Sprintf("the turn has used %d tokens%s of its budget of %d", n, theirs(subTokens), b.tokens)
	}
	if !b.costs() {
		return ""
	}
	all := b.spentSoFar()
	if !all.Known {
		return b.unpriced("a request of the turn", all)
	}
	spent := all.Dollars
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
