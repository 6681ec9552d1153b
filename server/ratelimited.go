package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/myelin-run/myelin/agent"
)

// This file is what a queued turn does when its key's rate limit holds
// it (issue 32 point 4, docs/scale.md "Workers"): a request of a turn
// run by a worker that would wait at its key's rate limiter for longer
// than HoldOver is not waited for there. The turn is stopped without
// ending, as a turn handed back is (agent.ErrHandedOver: nothing of the
// request is stored, the next holder sends it again), and RunQueued fails
// with a *RateLimitedError saying until when, so that the worker puts the
// job back in the queue until then and runs other keys' turns meanwhile.

// HoldOver is the longest a worker holds a queued turn whose request
// waits at its key's rate limiter: a longer wait (a retry-after of more
// than a few seconds, a spent minute's or day's quota) sends the turn
// back to the queue until it is over. A shorter one is waited where the
// turn runs: the next worker would pay a claim, the stored conversation's
// reading and a River round-trip for it, and the waits for an answer to
// a request already sent (the limiter's probe, 2 s) stay under it.
const HoldOver = 5 * time.Second

// NoticeRateLimited is the kind of the notice a queued turn reports
// instead of turn.finished when it goes back to the queue until its
// key's rate limit allows its request (RateLimitedError): the worker
// that takes its job up then goes on with it (its turn.finished is the
// turn's).
const NoticeRateLimited = "rate_limited"

// RateLimitedError is the error RunQueued fails with when the turn's
// request would have waited at its key's rate limiter until Until, more
// than HoldOver away: the turn was stopped without ending (it wraps
// agent.ErrHandedOver), and its job is to be run again at Until — not as
// a failed attempt — by whichever worker takes it. Why is the waiting
// event's text (agent.WaitText).
type RateLimitedError struct {
	Until time.Time
	Why   string
}

// Error says until when the turn waits, and why.
func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("the turn goes back to the queue until %s, when its key's rate limit allows its request (%s)", e.Until.UTC().Format(time.RFC3339), e.Why)
}

// Unwrap is agent.ErrHandedOver: the turn stopped without ending, for
// another run to continue.
func (e *RateLimitedError) Unwrap() error { return agent.ErrHandedOver }

// holdingOver is on, a queued turn's events, stopping the turn (cancel,
// its context's) with a *RateLimitedError once a Waiting event says its
// request waits at the rate limiter for more than HoldOver. The event is
// told first: the watchers see the wait, then the turn go back to the
// queue.
func holdingOver(on func(agent.Event), cancel context.CancelCauseFunc) func(agent.Event) {
	return func(e agent.Event) {
		on(e)
		if e.Kind == agent.Waiting && !e.Until.IsZero() && time.Until(e.Until) > HoldOver {
			cancel(&RateLimitedError{Until: e.Until, Why: e.Text})
		}
	}
}

// rateLimited is the *RateLimitedError a queued turn run under ctx was
// stopped by, nil when it was not.
func rateLimited(ctx context.Context) *RateLimitedError {
	var rl *RateLimitedError
	if handedOver(ctx) && errors.As(context.Cause(ctx), &rl) {
		return rl
	}
	return nil
}
