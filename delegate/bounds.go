package delegate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/tool"
)

// What a fan-out of calls may cost: one code_execution call started 300
// subagents at once (~1,200 requests in 8.8 s), each of which could spend
// the whole token limit. Two bounds hold across calls: Limits.Running
// places in the process, and Limits.Tokens shared by the tree of one round
// of calls (docs/agent.md, "Subagents").

// budget is the tokens that the children of one round of calls, and
// theirs, may use together (Limits.Tokens).
type budget struct {
	limit int64
	used  atomic.Int64
	once  sync.Once
	over  chan struct{} // closed once used has passed limit
}

// budgetKey is the key of a Delegate's budget in a tool.Scope, and in a
// child's context (for the tree of a call made outside any round).
type budgetKey struct{ d *Delegate }

// budgetOf is the budget a call under ctx draws on: its parent child's
// (the tree it is in), else its round's (tool.Scope), else one of its own.
func (d *Delegate) budgetOf(ctx context.Context, lim Limits) *budget {
	if b, ok := ctx.Value(budgetKey{d}).(*budget); ok {
		return b
	}
	fresh := func() any { return &budget{limit: int64(lim.Tokens), over: make(chan struct{})} }
	if s := tool.ScopeOf(ctx); s != nil {
		return s.Shared(budgetKey{d}, fresh).(*budget)
	}
	return fresh().(*budget)
}

// add counts n tokens, and reports whether the budget is now passed:
// every child drawing on it is then stopped.
func (b *budget) add(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.once.Do(func() { close(b.over) })
		return true
	}
	return false
}

// spent reports whether nothing is left for another child.
func (b *budget) spent() bool { return b.used.Load() >= b.limit }

// refusal is the error of a call that finds the budget spent.
func (b *budget) refusal() string {
	return fmt.Sprintf("%s: the subagents of this round of tool calls (with their scripts' and their own subagents') have used %d tokens together, their shared budget of %d (myelin's --delegate-tokens): no more subagents can start in this round; do the rest yourself", Name, b.used.Load(), b.limit)
}

// place takes one of the Limits.Running places for a child at depth
// (of its parent: 0 for a conversation a user started), and returns what
// gives it back; nil and the error result's text when there is none. A
// call from a conversation a user started waits for one until ctx ends
// (the child's time limit); a child's own call does not wait, as its
// parent holds a place the while.
func (d *Delegate) place(ctx context.Context, depth int, lim Limits) (free func(), busy string) {
	d.once.Do(func() { d.slots = make(chan struct{}, lim.Running) })
	release := func() { <-d.slots }
	select {
	case d.slots <- struct{}{}:
		return release, ""
	default:
	}
	if depth > 0 {
		return nil, fmt.Sprintf("%s: all %d subagents this process may run at once are running (myelin's --delegate-running raises the limit), and a subagent's own subagent does not wait for a place, as its parent holds one the while: do this task yourself", Name, cap(d.slots))
	}
	d.waiting.Add(1)
	defer d.waiting.Add(-1)
	select {
	case d.slots <- struct{}{}:
		return release, ""
	case <-ctx.Done():
	}
	if context.Cause(ctx) == errTime {
		return nil, fmt.Sprintf("%s: the subagent did not start: all %d subagents this process may run at once (myelin's --delegate-running) were running for its whole time limit of %s, which the wait counts toward; try again later, or do the task yourself", Name, cap(d.slots), lim.Time)
	}
	return nil, fmt.Sprintf("%s: the subagent was cancelled while it waited for a place among the %d subagents this process may run at once", Name, cap(d.slots))
}

// underCaller holds child to what remains of the budgets of the turn
// whose call starts it (sp; docs/cost.md, "Subagents and budgets"): its
// MaxTurnTokens and MaxCost are what the calling turn's token and cost
// budgets leave now (the lesser of its turn's and its conversation's
// cost budget), priced with the caller's Pricer; the child's requests are
// charged to the caller's turn as they come (turn). A caller with
// nothing left starts no child: the error result's text says so. A turn
// with no budgets (or no turn: sp nil) bounds nothing.
func underCaller(child *agent.Agent, sp *agent.Spending) string {
	if sp == nil {
		return ""
	}
	tokens, cost, why := sp.Left()
	if why != "" {
		return fmt.Sprintf("%s: the subagent was not started: the calling turn %s; a subagent spends from its caller's budget (docs/cost.md): do this task yourself, or continue the conversation with a larger budget", Name, why)
	}
	if tokens > 0 {
		child.MaxTurnTokens = tokens
	}
	if cost > 0 {
		child.MaxCost, child.Pricer = cost, sp.Pricer()
	}
	return ""
}
