package tool

import (
	"context"
	"time"

	"github.com/myelin-run/myelin/result"
)

// CallHere runs one call as Call does, but its handler on the caller's
// goroutine, with no goroutine and no timer of the dispatcher's own: for
// a caller that gives up on the call by itself, so that it needs no
// dispatcher to give up for it (a script's run: it stops waiting for a
// call when the script's time limit or a cancel ends the script, and
// then ends ctx). The caller promises to end ctx at until, or as soon
// after as it can: until is when it stops waiting at the latest.
//
// The call gets what Call would give it: found and its input checked,
// put to the Gate, its handler's panic an error result, its result
// converted once (result.Convert) and bounded by the round bound, its
// span, Finished and Converted as Call has them; its handler's context
// carries its id and cap, ends when the call does, and says until as its
// deadline. What the caller takes on:
//
//   - a handler that ignores its context holds the caller's goroutine
//     until it returns, after ctx ended too: the caller must be able to
//     leave that goroutine behind (it must not wait for it past ctx);
//   - a handler that returns once ctx ended has its result discarded
//     (never converted, its file removed) and the call gets the error
//     result of a call cancelled before it finished, as Call gives it.
//
// A call whose timeout (Dispatcher.Timeout, Tool.Timeout) would end
// before until is run as Call runs it, on a goroutine of its own: its
// timeout must end it even when its handler ignores its context, and
// the caller would not give up then. A zero until is a caller that
// never gives up: every call is then run as Call runs it.
func (d *Dispatcher) CallHere(ctx context.Context, c Call, until time.Time) result.Output {
	return d.round(ctx, []Call{c}, until)[0]
}

// here runs call i, prepared as p, on this goroutine (CallHere) and
// hands its result to done. It reports false, having done nothing, when
// the call's timeout would end before until: then the call must run as
// batch runs it.
func (d *Dispatcher) here(ctx context.Context, calls []Call, i int, p prepared, spans spans, until time.Time, done func(i int, r result.Result)) bool {
	start := time.Now()
	if start.Add(p.timeout).Before(until) {
		return false
	}
	c := &calls[i]
	// the call's own context, ended when it returns (as a round's limit
	// is): what its handler started with it must not outlive it
	hctx, cancel := context.WithCancel(&callContext{Context: ctx, id: c.ID, cap: result.CapFor(c.Cap, d.Env.Limits), until: until})
	defer cancel()
	res := handle(spans.start(hctx, i, *c), p.tool, c.Name, p.input)
	if ctx.Err() != nil {
		// the caller gave up on it, as a round gives up on a call when
		// its context ends: what it returned is never converted, and
		// must not leave its file behind
		result.Discard(res)
		res = result.Error(cancelledWhy(c.Name))
	}
	if d.Finished != nil {
		d.Finished(i, *c, time.Since(start))
	}
	done(i, res)
	return true
}

// callContext is what a call run here carries, in one value instead of
// one a key (an allocation each): its id (CallID, withCallID), its cap
// (CapFrom, WithCap), and until as its deadline when its parent says
// none sooner: the time its caller gives up on it, so that a handler
// that plans by its deadline (a request's timeout) sees one, as it sees
// its timeout's under a round. It ends when its parent does: its caller
// ends the parent by then.
type callContext struct {
	context.Context
	id    string
	cap   int
	until time.Time
}

func (c *callContext) Value(key any) any {
	switch key.(type) {
	case callIDKey:
		if c.id != "" {
			return c.id
		}
	case capKey:
		return c.cap
	}
	return c.Context.Value(key)
}

func (c *callContext) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.until) {
		return d, true
	}
	return c.until, true
}
