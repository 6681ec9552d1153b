package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// Gate decides whether a call may run (SPEC §14): the dispatcher asks it
// of every call of a round, once the call's tool is found and its input
// passes the schema, before any call of the round starts. A denied call
// is not run: it gets an error result saying so and why. approval.Gate is
// the one myelin uses (a permission policy, and a person asked through an
// approval.Asker).
//
// Check may be called for several calls at once, and may take as long as
// a person takes to answer: the dispatcher's timeouts start only when a
// call starts. It must return when ctx is done, with ctx's error: the
// call is then cancelled like any other, with no decision stored. Any
// other error denies the call, and its text is what the model is told.
// It must not run the call.
type Gate interface {
	Check(ctx context.Context, q Question) (Ruling, error)
}

// Question is one call put to a Gate.
type Question struct {
	// Tool is the call's tool, as the registry holds it: its name, and
	// what it says of itself (ReadOnly, Destructive).
	Tool *Tool
	// Call is the call as the model (or a script) made it; Input is its
	// arguments, {} when it gave none.
	Call Call
	// NoAsk says no person may be asked: what would be asked is denied
	// (Record.By "nobody"). A conversation's recovery sets it: a call
	// run again by itself runs only if the policy allows it outright.
	NoAsk bool
}

// Ruling is a Gate's answer on one call.
type Ruling struct {
	// Record is what was decided and by whom: its Decision is "allow" or
	// "deny". It is handed to the dispatcher's Ruled hook, and stored
	// with the call's result (history.Part.Permission).
	Record permission.Record
	// Denial is, for a denied call, the text of its error result: what
	// the model reads. It says the call was denied, why, and what would
	// allow it; empty means a text made from Record.Reason.
	Denial string
}

// Allowed reports whether r lets the call run.
func (r Ruling) Allowed() bool { return r.Record.Decision == permission.Allow.String() }

// denial is the error result of a call r denies.
func (r Ruling) denial(name string) result.Result {
	if r.Denial != "" {
		return result.Error(r.Denial)
	}
	why := r.Record.Reason
	if why == "" {
		why = "no reason was given"
	}
	return result.Error(fmt.Sprintf("the call of %s was denied and did not run: %s", name, why))
}

// gateKey carries the Gate of the calls run under a ctx.
type gateKey struct{}

// WithGate is ctx under which every call is checked by g: whoever runs a
// conversation's rounds (the agent) wraps its context with it, and the
// calls run under it — a script's calls (code_execution), a subagent's
// turn and its rounds (agent--delegate) — are checked by g as well,
// since their contexts come from the call's. A nil g leaves ctx as it is.
func WithGate(ctx context.Context, g Gate) context.Context {
	if g == nil {
		return ctx
	}
	return context.WithValue(ctx, gateKey{}, g)
}

// GateOf is the Gate of ctx (WithGate), nil when there is none: then
// every call runs.
func GateOf(ctx context.Context) Gate {
	g, _ := ctx.Value(gateKey{}).(Gate)
	return g
}

// gate is the gate a round under ctx is checked by: the dispatcher's own,
// else ctx's.
func (d *Dispatcher) gate(ctx context.Context) Gate {
	if d.Gate != nil {
		return d.Gate
	}
	return GateOf(ctx)
}

// check puts the prepared calls of a round to g, all at once, and
// settles each one it does not allow: denied (an error result saying
// why), or cancelled. It returns when every call is decided; the ones
// left in ready may run.
func (d *Dispatcher) check(ctx context.Context, g Gate, calls []Call, ready []prepared, done func(int, result.Result)) {
	var wg sync.WaitGroup
	verdicts := make([]result.Result, len(calls))
	denied := make([]bool, len(calls))
	ask := func(i int) {
		p := &ready[i]
		in := p.input
		c := calls[i]
		c.Input = json.RawMessage(in)
		rul, err := g.Check(ctx, Question{Tool: p.tool, Call: c})
		switch {
		case err != nil && ctx.Err() != nil:
			verdicts[i], denied[i] = result.Error(notStartedWhy(c.Name)), true
			return
		case err != nil:
			verdicts[i], denied[i] = result.Error(fmt.Sprintf("the call of %s did not run: it could not be checked against the permission policy: %v", c.Name, err)), true
			return
		}
		if d.Ruled != nil {
			d.Ruled(i, calls[i], rul.Record)
		}
		if !rul.Allowed() {
			verdicts[i], denied[i] = rul.denial(c.Name), true
		}
	}
	var pending []int
	for i := range ready {
		if ready[i].tool != nil {
			pending = append(pending, i)
		}
	}
	if len(pending) == 1 {
		ask(pending[0])
	} else {
		for _, i := range pending {
			wg.Go(func() { ask(i) })
		}
		wg.Wait()
	}
	for _, i := range pending {
		if denied[i] {
			ready[i].tool = nil
			d.settleNow(i, calls[i], verdicts[i], done)
		}
	}
}

// notStartedWhy is the result of a call that never started because the
// round was cancelled first.
func notStartedWhy(name string) string {
	return fmt.Sprintf("tool %s was cancelled before it started; it did not run", name)
}
