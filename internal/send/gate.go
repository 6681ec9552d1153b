package send

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// This file is the Sender's optional rate-limit gate (issue 32 point 2,
// docs/ratelimits.md "The sender's gate"): with one, every attempt of a
// request — the first and each retry — waits at the limiter before it is
// sent, and every answer, whatever its status, is observed by it. Without
// one nothing here runs and the Sender sends as the SDK would.

// maxObserved is the most of a retried error answer's body the gate
// reads for the limiter (ratelimit.FromResponse reads no more): an error
// body is a few hundred bytes.
const maxObserved = 64 << 10

// gate is a Sender's rate limiter and how it names the Sender's key.
type gate struct {
	limiter *ratelimit.Limiter
	// wire is provider.WireName's name, for ratelimit.FromResponse
	wire string
	// identity is ratelimit.Identity of the key the Sender sends
	identity string
}

// WithLimiter is a Sender like s whose every attempt waits at l before it
// is sent and whose every answer l observes (nil l: a Sender like s
// without a gate). wire is the wire's name (provider.WireName's, which
// ratelimit.FromResponse reads by), identity ratelimit.Identity of the
// API key the Sender's requests carry ("" for a platform's credentials,
// named by the caller some other way) — never the key itself. The key a
// request waits under is the Target's URL host, identity, and the model
// the request's context names (ratelimit.WithModel; "" when it names
// none).
//
// The retries stay the SDK's rules: a retry's own wait (a retry-after, a
// backoff) is waited first, then the limiter's, which is over at once
// when the wait was a retry-after the limiter also holds. A wait at the
// limiter is told to the context's observer (provider.WithWaitNotice);
// its end by the context is the call's error, wrapping the context's.
func (s *Sender) WithLimiter(l *ratelimit.Limiter, wire, identity string) *Sender {
	c := *s
	c.gate = nil
	if l != nil {
		c.gate = &gate{limiter: l, wire: wire, identity: identity}
	}
	return &c
}

// limitKey is the key the requests of s sent in ctx wait under.
func (s *Sender) limitKey(ctx context.Context) ratelimit.Key {
	return ratelimit.Key{Endpoint: s.target.URL.Host, Identity: s.gate.identity, Model: ratelimit.ModelOf(ctx)}
}

// await waits at the gate for attempt n (0 for the first) of a request
// of key, telling ctx's observer of the wait.
func (s *Sender) await(ctx context.Context, key ratelimit.Key, n int) error {
	url := provider.Redact(s.target.URL)
	_, err := s.gate.limiter.Wait(ctx, key, func(until time.Time, why string) {
		provider.NoticeWait(ctx, provider.WaitNotice{Attempt: n + 1, Until: until, Why: why, URL: url})
	})
	return err
}

// observe gives the gate what res said of key's limits. body is res's
// error body when the Sender has read it (read), else, for an answer of
// 400 or more, what peek reads of it, leaving it whole for the caller.
// The limiter's error (a Shared store that could not save) is not the
// request's: the state is kept in the process all the same.
func (s *Sender) observe(ctx context.Context, key ratelimit.Key, res *http.Response, body []byte, read bool) {
	if !read && res.StatusCode >= http.StatusBadRequest {
		body = peek(res)
	}
	o := ratelimit.FromResponse(s.gate.wire, res.StatusCode, res.Header, body, s.gate.now())
	o.From = key.Endpoint
	_ = s.gate.limiter.Observe(ctx, key, o)
}

// now is the limiter's time, which an observation counts from.
func (g *gate) now() time.Time {
	if g.limiter.Clock != nil {
		return g.limiter.Clock.Now()
	}
	return time.Now()
}

// peek reads up to maxObserved bytes of res's body and puts them back in
// front of the rest, so that whoever reads the body next reads it whole.
// A read error is left for that reader to meet.
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
