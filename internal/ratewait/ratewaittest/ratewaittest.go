// Package ratewaittest holds what the wires' tests of their rate-limit
// gate share: a clock whose waits pass at once (Clock), a Shared store
// that records the keys saved to it (Keys), and the check every wire
// passes alike (Check): a 429's retry-after, observed on one request,
// holds the next one back until it has passed, with a WaitNotice, under
// the key the wire names, which holds no secret. It is for tests only.
package ratewaittest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/ratelimit/ratelimittest"
)

// Clock is a ratelimit.Clock whose waits pass at once: After(d) moves
// its time on by d and fires. Nothing else moves it, so a test reads
// exactly when, by it, a wait ended and a request was sent.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a Clock at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After moves the clock on by d (when above 0) and returns a channel
// that holds the new time.
func (c *Clock) After(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	ch := make(chan time.Time, 1)
	ch <- c.now
	c.mu.Unlock()
	return ch, func() {}
}

// Keys is a Shared store in memory (ratelimittest.Memory) that records
// every key spent from or saved to it.
type Keys struct {
	ratelimittest.Memory
	mu    sync.Mutex
	saved []ratelimit.Key
}

// Spend records key and spends from it.
func (k *Keys) Spend(ctx context.Context, key ratelimit.Key, now time.Time, probe time.Duration) (ratelimit.State, bool, error) {
	k.record(key)
	return k.Memory.Spend(ctx, key, now, probe)
}

// Save records key and saves a under it.
func (k *Keys) Save(ctx context.Context, key ratelimit.Key, a ratelimit.Answer) (ratelimit.State, error) {
	k.record(key)
	return k.Memory.Save(ctx, key, a)
}

func (k *Keys) record(key ratelimit.Key) {
	k.mu.Lock()
	k.saved = append(k.saved, key)
	k.mu.Unlock()
}

// Saved is every key spent from or saved so far, in order.
func (k *Keys) Saved() []ratelimit.Key {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]ratelimit.Key(nil), k.saved...)
}

// Case is one wire's check by Check.
type Case struct {
	// New is the wire, its Config's Limiter lim and its retries none
	// (MaxRetries -1), sending to a fake whose first request of the key
	// is answered 429 asking for RetryAfter, and every later one with an
	// answer.
	New func(t *testing.T, lim *ratelimit.Limiter) provider.Provider
	// Arrivals is when, by the clock Check gives (Clock.Now, read by
	// the fake as each request arrives), the fake saw each request of
	// the wire, in order.
	Arrivals func() []time.Time
	// RetryAfter is what the fake's 429 asks for.
	RetryAfter time.Duration
	// Key is the key the wire's requests are to wait under.
	Key ratelimit.Key
	// Secrets are what no key may hold (the API key, a token).
	Secrets []string
	// Request is what is sent; its Model is the Key's.
	Request provider.Request
}

// Start is the time a Check's clock starts at.
var Start = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

// Check holds a wire to its gate: with a limiter, a first request
// answered 429 with a retry-after has the second wait — a WaitNotice
// told, until the 429's time plus its retry-after, for the first attempt,
// before the fake saw the second request — and the fake sees the second
// no earlier than that; every key saved is c.Key, and none holds a
// secret. clock is the one c.New's fake reads arrivals by.
func Check(t *testing.T, clock *Clock, c Case) {
	t.Helper()
	keys := &Keys{}
	lim := &ratelimit.Limiter{Clock: clock, Shared: keys}
	p := c.New(t, lim)
	ctx := context.Background()
	if _, err := p.Complete(ctx, c.Request, nil); err == nil {
		t.Fatal("the first request succeeded; the fake was to answer it 429")
	}
	first := c.Arrivals()
	if len(first) != 1 {
		t.Fatalf("the fake saw %d requests after the first Complete, want 1 (no retries)", len(first))
	}
	refused := first[0]
	type heard struct {
		n    provider.WaitNotice
		seen int
	}
	var notices []heard
	ctx = provider.WithWaitNotice(ctx, func(n provider.WaitNotice) {
		notices = append(notices, heard{n, len(c.Arrivals())})
	})
	if _, err := p.Complete(ctx, c.Request, nil); err != nil {
		t.Fatalf("the second request, after the wait: %v", err)
	}
	if len(notices) == 0 {
		t.Fatal("the second request was told no WaitNotice: it did not wait at the limiter")
	}
	n := notices[0]
	if want := refused.Add(c.RetryAfter); !n.n.Until.Equal(want) {
		t.Errorf("the WaitNotice's Until is %v, want the 429's time plus its retry-after, %v", n.n.Until, want)
	}
	if n.n.Attempt != 1 || n.n.URL == "" || !strings.Contains(n.n.Why, c.Key.Endpoint) {
		t.Errorf("the WaitNotice is %+v: want attempt 1, the URL, and a why naming %s", n.n, c.Key.Endpoint)
	}
	if n.seen != 1 {
		t.Errorf("the fake had seen %d requests when the wait was told, want 1: the second went before its wait", n.seen)
	}
	all := c.Arrivals()
	if len(all) != 2 {
		t.Fatalf("the fake saw %d requests in all, want 2", len(all))
	}
	if all[1].Before(refused.Add(c.RetryAfter)) {
		t.Errorf("the second request arrived at %v, before the retry-after ended at %v", all[1], refused.Add(c.RetryAfter))
	}
	CheckKeys(t, keys.Saved(), c.Key, c.Secrets...)
}

// KeysOf is every key the limiter observed while the wire newWire makes
// with it sent req once (its answer's error, if any, is not the test's).
func KeysOf(t *testing.T, newWire func(t *testing.T, lim *ratelimit.Limiter) provider.Provider, req provider.Request) []ratelimit.Key {
	t.Helper()
	keys := &Keys{}
	p := newWire(t, &ratelimit.Limiter{Clock: NewClock(Start), Shared: keys})
	_, _ = p.Complete(context.Background(), req, nil)
	return keys.Saved()
}

// CheckKeys fails t unless keys is not empty and every one is want, and
// none holds any of secrets.
func CheckKeys(t *testing.T, keys []ratelimit.Key, want ratelimit.Key, secrets ...string) {
	t.Helper()
	if len(keys) == 0 {
		t.Fatal("the limiter observed nothing")
	}
	for _, k := range keys {
		if k != want {
			t.Errorf("a key observed is %#v, want %#v", k, want)
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(k.String(), s) {
				t.Errorf("the key %q holds the secret %q", k, s)
			}
		}
	}
}

// RefuseFirst starts a fake with serve whose first request is answered
// 429 (with the fake's retry-after-ms: 5) and every later one "ok", and
// returns it with the times, by clock, its requests arrived at.
func RefuseFirst(t *testing.T, serve func(testing.TB, ...providertest.Step) *providertest.Server, clock *Clock) (*providertest.Server, func() []time.Time) {
	srv := serve(t)
	var mu sync.Mutex
	var at []time.Time
	srv.Respond = func(r providertest.Request) providertest.Step {
		mu.Lock()
		at = append(at, clock.Now())
		mu.Unlock()
		if r.Index == 0 {
			return providertest.Step{Status: http.StatusTooManyRequests, ErrorMessage: "Rate limit reached"}
		}
		return providertest.Step{Text: "ok"}
	}
	return srv, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), at...)
	}
}
