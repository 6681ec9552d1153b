// Package ratewait is the rate-limit gate: internal/send's Senders wait at
// one before each attempt they post, Gemini's poster at its own, and the
// wires key by one what they observe after an answer began (Gate.Key: a
// refusal inside a stream). Every attempt of a request — the first and each retry
// — waits at a ratelimit.Limiter before it is sent (Gate.Wait), telling
// the context's observer (provider.WithWaitNotice), and every answer,
// whatever its status, is observed by it (Pass.Observe), as internal/send's
// gate does for the requests it posts (docs/ratelimits.md, "The sender's
// gate").
//
// It owns the gate only: it must not retry, sleep for a retry, read a
// wire's error for anything but the limiter, nor hold an API key (a Gate
// names its key by ratelimit.Identity, or a platform's account).
package ratewait

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// maxObserved is the most of an error answer's body read for the
// limiter (ratelimit.FromResponse reads no more): an error is a few
// hundred bytes.
const maxObserved = 64 << 10

// Gate is a rate limiter and how the requests passing it are named: the
// wire (provider.WireName's name, which ratelimit.FromResponse reads by)
// and the identity of the key or account they are sent with. A nil *Gate
// lets everything through and observes nothing.
type Gate struct {
	limiter  *ratelimit.Limiter
	wire     string
	identity string
}

// New is the gate at l of wire's requests sent with identity
// (ratelimit.Identity of an API key, or a platform's account, never a
// key or a token), nil when l is nil: no limiter, no gate.
func New(l *ratelimit.Limiter, wire, identity string) *Gate {
	if l == nil {
		return nil
	}
	return &Gate{limiter: l, wire: wire, identity: identity}
}

// Key is the key a request to u sent in ctx waits under: u's host (and
// port), the gate's identity, and the model ctx names
// (ratelimit.WithModel; "" when it names none).
func (g *Gate) Key(ctx context.Context, u *url.URL) ratelimit.Key {
	return ratelimit.Key{Endpoint: u.Host, Identity: g.identity, Model: ratelimit.ModelOf(ctx)}
}

// Pass is one attempt let through a gate, for its answer to be observed.
// Its zero value (a nil gate's) observes nothing.
type Pass struct {
	g   *Gate
	ctx context.Context
	key ratelimit.Key
	// ticket is the attempt's place among the key's requests
	// (ratelimit.Waited.Ticket), which its answer is observed with
	ticket ratelimit.Ticket
}

// Wait waits at the gate for attempt (1 for the first) of a request of
// key to url (as provider.Redact writes it), telling ctx's observer of
// the wait (provider.NoticeWait) before it starts and whenever its end
// moves later. A context ended meanwhile is Wait's error, which wraps the
// context's and names the key; nothing is to be sent then. On a nil gate
// it returns at once.
func (g *Gate) Wait(ctx context.Context, key ratelimit.Key, attempt int, url string) (Pass, error) {
	return g.WaitUntil(ctx, key, attempt, url, time.Time{})
}

// ErrPastLimit is the error (wrapped, naming the key and the times) of a
// WaitUntil that gave up because the gate's wait would end after its
// limit.
var ErrPastLimit = errors.New("the rate limit's wait ends past the retries' bound")

// WaitUntil is Wait that gives up when the wait at the gate would end
// after limit (the zero time: no limit), as the limiter's clock tells
// time: the wait is told to ctx's observer first (provider.NoticeWait),
// then given up, and its error wraps ErrPastLimit; nothing is to be sent
// then. When ctx itself ends — an observer that hands the turn over on
// hearing of the long wait cancels it from inside the notice — the error
// is ctx's, as Wait's, never ErrPastLimit: the caller's cancel wins.
func (g *Gate) WaitUntil(ctx context.Context, key ratelimit.Key, attempt int, url string, limit time.Time) (Pass, error) {
	if g == nil {
		return Pass{}, nil
	}
	wctx, giveUp := context.WithCancelCause(ctx)
	defer giveUp(nil)
	var past time.Time // the end of the wait that was past limit
	w, err := g.limiter.Wait(wctx, key, func(until time.Time, why string) {
		provider.NoticeWait(ctx, provider.WaitNotice{Attempt: attempt, Until: until, Why: why, URL: url})
		if !limit.IsZero() && until.After(limit) {
			past = until
			giveUp(ErrPastLimit)
		}
	})
	// Given up, even when the wait passed in the same instant (a clock
	// whose waits pass at once): what the observer was told, a wait
	// past the limit, is what happens.
	switch {
	case past.IsZero():
	case ctx.Err() != nil && err == nil:
		err = fmt.Errorf("waiting for the rate limit of %s: %w", key, ctx.Err())
	case ctx.Err() == nil:
		err = fmt.Errorf("waiting for the rate limit of %s until %s, past %s: %w", key,
			past.UTC().Format(time.RFC3339), limit.UTC().Format(time.RFC3339), ErrPastLimit)
	}
	// The pass keeps ctx, not wctx: its answer is observed after wctx
	// is done with.
	return Pass{g: g, ctx: ctx, key: key, ticket: w.Ticket}, err
}

// Observe gives the limiter what res, the answer to the attempt, said of
// its key's limits, with the attempt's ticket (so that the requests sent
// after it are counted against the budget it reports), and returns it.
// body is res's error body when the caller has read it; nil has an
// answer of 400 or more peeked at (up to
// 64 KiB read and put back in front of the rest, so that the caller still
// reads it whole). The limiter's own error (a Shared store that could not
// save) is not the request's: the state is kept in the process all the
// same.
func (p Pass) Observe(res *http.Response, body []byte) ratelimit.Observation {
	if p.g == nil || res == nil {
		return ratelimit.Observation{}
	}
	if body == nil && res.StatusCode >= http.StatusBadRequest {
		body = peek(res)
	}
	o := ratelimit.FromResponse(p.g.wire, res.StatusCode, res.Header, body, p.g.Now())
	o.From = p.key.Endpoint
	_ = p.g.limiter.ObserveAnswer(p.ctx, p.key, p.ticket, o)
	return o
}

// Unreached tells the limiter that the attempt p let through got no
// answer because it never reached the provider (provider.Unconnected: no
// connection was made; ratelimit.Limiter.ObserveUnreached). The key's
// budget stays as it was, as after a fault without limit headers, and,
// unless the attempt may have been written off as lost already
// (ratelimit.Answer.Unreached), it counts as answered, so its retry goes
// at its own backoff rather than a Probe after it, and no wait reads
// "waiting for an answer to a request already sent" for a request that
// never left. A nil p (no limiter) does nothing.
func (p Pass) Unreached() {
	if p.g == nil {
		return
	}
	_ = p.g.limiter.ObserveUnreached(p.ctx, p.key, p.ticket)
}

// Now is the limiter's time, which its waits and observations count by:
// its Clock's, else the real one.
func (g *Gate) Now() time.Time {
	if g == nil {
		return time.Now()
	}
	return g.limiter.Now()
}

// peek reads up to maxObserved bytes of res's body and puts them back in
// front of the rest. A read error is left for the body's reader to meet.
func peek(res *http.Response) []byte {
	if res.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxObserved))
	res.Body = peeked{Reader: io.MultiReader(bytes.NewReader(b), res.Body), Closer: res.Body}
	return b
}

// peeked is a body whose first bytes were read before.
type peeked struct {
	io.Reader
	io.Closer
}
