package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/window"
)

// This file is a turn's resending of a request that failed before
// anything of its answer was shown (Agent.RetryFor; docs/ratelimits.md,
// "Retries"): a stream cut or an error event before its first output, or
// an overload, a server's fault, a rate limit or no answer that the
// wire's own retries gave up on. The same request is sent again from
// scratch — the same bytes, so the prompt cache still holds its prefix —
// after the SDKs' jittered exponential backoff (send.Backoff), or the
// wait the provider asked for, while that stays within RetryFor of its
// first attempt; each resend is a Retry event. An answer of which
// something was shown is never sent again: it is stored as far as it
// went (fail, CutAnswer) and the turn says so (cutNotice).

// pacing is how a turn's resends tell and wait time: the real clock,
// unless a test sets the agent's (Agent.pacing).
type pacing struct {
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(q int64) int64 // nil: send.Backoff's random one
}

// pace is the agent's pacing, the real one where a test set none.
func (a *Agent) pace() pacing {
	p := a.pacing
	if p.now == nil {
		p.now = time.Now
	}
	if p.sleep == nil {
		p.sleep = send.Sleep
	}
	return p
}

// send sends req, whose answer will be stored at place, as complete
// does, and again from scratch while it fails before anything of its
// answer was shown for a reason a resend may mend (provider.Transient),
// within the agent's RetryFor of its first attempt. Each failed attempt
// sent again is kept as a request that got no answer (sent.keep). Its
// error is the last attempt's, saying so when the provider asked for a
// wait longer than the time left.
func (t *turning) send(x *reply, req provider.Request, place int, size window.Count) (provider.Response, error) {
	p := t.a.pace()
	first := p.now()
	ctx := t.providerCtx
	if t.a.RetryFor > 0 {
		// the wire's own retries end within the same bound: its
		// attempts and these resends together take at most RetryFor
		ctx = provider.WithRetryDeadline(ctx, first.Add(t.a.RetryFor))
	}
	made := 0 // the request's attempts so far, its wire's own retries included
	for n := 0; ; n++ {
		sctx := ctx
		if made > 0 {
			// the wire numbers its attempts after these
			sctx = provider.WithAttemptsBefore(ctx, made)
		}
		t.newestAttempt.Store(0)
		resp, err := t.complete(sctx, x, req, place, size)
		if err == nil {
			return resp, nil
		}
		made = max(made+1, int(t.newestAttempt.Load()), attemptsOf(err))
		t.reached = t.reached || !provider.NeverReached(err)
		d, again, why := t.resend(x, err, n, made, p.now().Sub(first), p)
		if !again {
			if why != "" {
				err = fmt.Errorf("%w (not sent again: %s)", err, why)
			}
			return resp, err
		}
		t.sent.keep(t.ctx, false, nil, err)
		t.on(Event{Kind: Retry, Text: RetryText(t.sent.wire, provider.RetryNotice{
			Attempt: made + 1, For: t.a.RetryFor, Wait: d, Why: provider.Failure(err)})})
		if serr := p.sleep(t.ctx, d); serr != nil {
			return resp, serr
		}
	}
}

// resend decides of err, the failure of send n (0 for the first) of x's
// request elapsed after its first, made attempts in all with the wire's
// own retries: whether it is sent again, after d, and when it is not for
// a reason the turn's error should carry, why in words.
func (t *turning) resend(x *reply, err error, n, made int, elapsed time.Duration, p pacing) (d time.Duration, again bool, why string) {
	if re, ok := provider.WaitTooLong(err); ok {
		return 0, false, re.Why() // the wire's retries said why they ended
	}
	if t.a.RetryFor <= 0 || x.shown() || t.ctx.Err() != nil || !provider.Transient(err) {
		return 0, false, ""
	}
	d = send.Backoff(n, p.jitter)
	asked := retryAfter(err)
	if asked > 0 {
		d = asked
	}
	if elapsed+d > t.a.RetryFor {
		if asked > 0 {
			return 0, false, fmt.Sprintf("the provider asked to wait %s, more than the %s left of the %s the request may be retried for",
				asked.Round(time.Millisecond), max(0, t.a.RetryFor-elapsed).Round(time.Millisecond), t.a.RetryFor)
		}
		if n > 0 {
			return 0, false, fmt.Sprintf("%d attempts over %s, as long as it may be retried (%s)", made, elapsed.Round(time.Millisecond), t.a.RetryFor)
		}
		return 0, false, ""
	}
	return d, true, ""
}

// attemptsOf is how many attempts err's wire says its request made (a
// provider.ConnectionError's Attempts, numbered after those of earlier
// sends), 0 when it says none.
func attemptsOf(err error) int {
	var ce *provider.ConnectionError
	if errors.As(err, &ce) {
		return ce.Attempts
	}
	return 0
}

// retryAfter is the wait the answer that failed a request asked for, as
// its wire's sender read it (provider.RetriesEnded); 0 when it asked for
// none. With a rate limiter the wire's next attempt waits it there too,
// counted from when the answer was read: waited here first, that wait is
// over by then (docs/ratelimits.md, "Retries").
func retryAfter(err error) time.Duration {
	var re *provider.RetriesEnded
	if errors.As(err, &re) {
		return re.RetryAfter
	}
	return 0
}

// cutNotice is the words of the Notice a turn gives when x's answer,
// part of which was shown, failed with err: it is stored as far as it
// went and not sent again.
func cutNotice(x *reply, err error) string {
	shown := fmt.Sprintf("after %d characters", len([]rune(x.streamed.String())))
	if x.streamed.Len() == 0 {
		shown = "after its thinking, before any text"
	}
	return fmt.Sprintf("the answer was cut off mid-stream %s; it is stored as far as it went, marked as cut off, and not sent again since part of it was shown: %s", shown, provider.Failure(err))
}
