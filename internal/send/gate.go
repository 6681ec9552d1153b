package send

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"reflect"
	"sync"
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

	// tickets holds the ticket of each attempt let through (await) until
	// its answer is observed (observe), by the attempt's context and key.
	mu      sync.Mutex
	tickets map[slot]*pending
}

// slot names the attempts of one context to one key: those of one Post,
// unless the caller posts several at once in one context.
type slot struct {
	ctx context.Context
	key ratelimit.Key
}

// pending is the tickets of a slot's attempts not yet answered, oldest
// first, and the release of its entry when its context ends.
type pending struct {
	tickets []ratelimit.Ticket
	stop    func() bool
}

// maxHeld bounds a slot's tickets: an attempt that got no answer (a
// connection error) leaves its ticket, taken by the slot's next answer.
const maxHeld = 8

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
// of key, telling ctx's observer of the wait, and keeps the attempt's
// ticket for observe (wait).
func (s *Sender) await(ctx context.Context, key ratelimit.Key, n int) error {
	ticket, err := s.wait(ctx, key, n)
	if err == nil {
		s.gate.hold(ctx, key, ticket)
	}
	return err
}

// wait waits at the gate for attempt n (0 for the first) of a request of
// key, telling ctx's observer of the wait, and returns the attempt's
// ticket, for its answer's observation (answered).
func (s *Sender) wait(ctx context.Context, key ratelimit.Key, n int) (ratelimit.Ticket, error) {
	url := provider.Redact(s.target.URL)
	w, err := s.gate.limiter.Wait(ctx, key, func(until time.Time, why string) {
		provider.NoticeWait(ctx, provider.WaitNotice{Attempt: n + 1, Until: until, Why: why, URL: url})
	})
	return w.Ticket, err
}

// observe gives the gate what res, the answer to the attempt await let
// through last in ctx for key, said of key's limits (answered, with the
// attempt's ticket).
func (s *Sender) observe(ctx context.Context, key ratelimit.Key, res *http.Response, body []byte, read bool) {
	s.answered(ctx, key, s.gate.take(ctx, key), res, body, read)
}

// answered gives the gate what res, the answer to the attempt of ticket,
// said of key's limits. body is res's error body when the Sender has read
// it (read), else, for an answer of 400 or more, what peek reads of it,
// leaving it whole for the caller. The limiter's error (a Shared store
// that could not save) is not the request's: the state is kept in the
// process all the same.
func (s *Sender) answered(ctx context.Context, key ratelimit.Key, ticket ratelimit.Ticket, res *http.Response, body []byte, read bool) {
	if !read && res.StatusCode >= http.StatusBadRequest {
		body = peek(res)
	}
	o := ratelimit.FromResponse(s.gate.wire, res.StatusCode, res.Header, body, s.gate.now())
	o.From = key.Endpoint
	_ = s.gate.limiter.ObserveAnswer(ctx, key, ticket, o)
}

// hold keeps ticket for the next answer observed in ctx for key. A
// context that cannot be a map key (a struct holding a slice, say) keeps
// nothing: its answers are taken as the latest request's (take).
func (g *gate) hold(ctx context.Context, key ratelimit.Key, ticket ratelimit.Ticket) {
	if !reflect.TypeOf(ctx).Comparable() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tickets == nil {
		g.tickets = map[slot]*pending{}
	}
	sl := slot{ctx, key}
	h := g.tickets[sl]
	if h == nil {
		h = &pending{}
		if ctx.Done() != nil {
			h.stop = context.AfterFunc(ctx, func() { g.drop(sl, h) })
		}
		g.tickets[sl] = h
	}
	if len(h.tickets) == maxHeld {
		h.tickets = h.tickets[1:]
	}
	h.tickets = append(h.tickets, ticket)
}

// take is the ticket of the oldest attempt in ctx for key not yet
// answered: the answer's own when the context's attempts to key go one
// at a time, as a Post's do; else one older than its own, which counts
// the requests sent after it as more than they are (the budget the answer
// gives is less, never more, than its key has left). Without one (a
// context hold could not keep), it is the latest request's of the key in
// the process.
func (g *gate) take(ctx context.Context, key ratelimit.Key) ratelimit.Ticket {
	g.mu.Lock()
	defer g.mu.Unlock()
	sl := slot{ctx, key}
	if !reflect.TypeOf(ctx).Comparable() || g.tickets[sl] == nil {
		return g.limiter.State(key).Ticket()
	}
	h := g.tickets[sl]
	ticket := h.tickets[0]
	h.tickets = h.tickets[1:]
	if len(h.tickets) == 0 {
		delete(g.tickets, sl)
		if h.stop != nil {
			h.stop()
		}
	}
	return ticket
}

// drop forgets sl's tickets once its context ended, when h is still its
// entry.
func (g *gate) drop(sl slot, h *pending) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tickets[sl] == h {
		delete(g.tickets, sl)
	}
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
