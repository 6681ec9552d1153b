package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// This file is what a turn does about a provider it cannot reach: each
// retry told as a Retry event (RetryText), and a new conversation whose
// first request never reached the provider deleted rather than kept with
// a cut answer (Agent.DropUnreached).

// RetryText is the words of a Retry event: "retrying anthropic request
// (attempt 2 of 5) in 0.8s: connection refused by 127.0.0.1:9", or, for
// retries bounded by time (Attempts 0), "retrying anthropic request
// (attempt 3, for up to 2m0s) in 1.0s: 529 Overloaded". wire is the
// wire's name (provider.WireName), "" when it says none.
func RetryText(wire string, n provider.RetryNotice) string {
	what := "the request"
	if wire != "" {
		what = wire + " request"
	}
	of := fmt.Sprintf(" of %d", n.Attempts)
	if n.Attempts <= 0 {
		of = ", for up to " + n.For.String()
	}
	return fmt.Sprintf("retrying %s (attempt %d%s) in %s: %s", what, n.Attempt, of, wait(n.Wait), n.Cause())
}

// wait is d as a retry's words say it: tenths of a second, or
// milliseconds below one tenth.
func wait(d time.Duration) string {
	if d < 100*time.Millisecond {
		return d.Round(time.Millisecond).String()
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

// retryNotice is the observer of a turn's requests' retries
// (provider.WithRetryNotice): each is a Retry event, its attempt kept in
// newest for the turn's resends to count from (noticed).
func (a *Agent) retryNotice(on func(Event), newest *atomic.Int32) func(provider.RetryNotice) {
	wire := provider.WireName(a.Provider)
	return func(n provider.RetryNotice) {
		noticed(newest, n.Attempt)
		on(Event{Kind: Retry, Text: RetryText(wire, n)})
	}
}

// noticed keeps attempt in newest when it is the newest told of: a retry
// is told as a Retry before its backoff, or, when the answer asked for a
// wait the rate limiter holds, only as that wait (waitNotice), so both
// observers keep what they hear.
func noticed(newest *atomic.Int32, attempt int) {
	for {
		old := newest.Load()
		if int32(attempt) <= old || newest.CompareAndSwap(old, int32(attempt)) {
			return
		}
	}
}

// droppable reports whether a turn of prompt on conversation conv, which
// held st before it, deletes the conversation when its first request
// never reaches the provider (Agent.DropUnreached).
func (a *Agent) droppable(prompt *string, st *readState, conv history.Conversation) bool {
	if !a.DropUnreached || prompt == nil || st.end() > 0 || conv.Parent != "" {
		return false
	}
	_, ok := a.Store.(history.Deleter)
	return ok
}

// unreachedError is a droppable turn's error when its first request never
// reached the provider: nothing but the prompt is stored, and claimed
// deletes the conversation (drop) once the claim is released.
type unreachedError struct{ err error }

func (e *unreachedError) Error() string { return e.err.Error() }
func (e *unreachedError) Unwrap() error { return e.err }

// drop deletes conversation id, whose first request never reached the
// provider (cause), claim released. When it cannot be deleted, the turn
// is stored as any failed turn is: its answer cut, with nothing in it.
func (a *Agent) drop(ctx context.Context, id string, tr TurnResult, cause error, on func(Event)) (TurnResult, error) {
	kept := context.WithoutCancel(ctx)
	err := a.Store.(history.Deleter).Delete(kept, id)
	if err == nil {
		a.forgetRecord(id)
		tr.Dropped = true
		return tr, cause
	}
	err = fmt.Errorf("conversation %s, whose first request never reached the provider, could not be deleted: %w", id, err)
	cctx, release, cerr := a.claim(kept, id, false, on)
	if cerr != nil {
		return tr, errors.Join(cause, err, cerr)
	}
	defer release()
	return tr, errors.Join(cause, err, a.store(cctx, id, on, CutAnswer("")))
}
