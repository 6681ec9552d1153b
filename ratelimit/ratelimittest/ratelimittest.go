// Package ratelimittest checks a ratelimit.Shared store against what the
// Limiter counts on (RunShared), and gives tests one in memory (Memory).
// It is for tests only; it must not be imported by production code.
package ratelimittest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/ratelimit"
)

// Memory is a ratelimit.Shared in memory, as processes sharing one
// database would see it: Save keeps the later next-allowed time (and its
// reason) and the budget of the later observation. Its zero value is
// ready to use.
type Memory struct {
	mu     sync.Mutex
	states map[ratelimit.Key]ratelimit.State
}

// Load is key's saved state.
func (m *Memory) Load(_ context.Context, key ratelimit.Key) (ratelimit.State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[key]
	return st, ok, nil
}

// Save merges st into key's saved state, never moving its next-allowed
// time earlier.
func (m *Memory) Save(_ context.Context, key ratelimit.Key, st ratelimit.State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.states == nil {
		m.states = map[ratelimit.Key]ratelimit.State{}
	}
	if old, ok := m.states[key]; ok {
		if old.NextAllowed.After(st.NextAllowed) {
			st.NextAllowed, st.Why = old.NextAllowed, old.Why
		}
		if old.UpdatedAt.After(st.UpdatedAt) {
			st.Remaining, st.UpdatedAt = old.Remaining, old.UpdatedAt
		}
	}
	m.states[key] = st
	return nil
}

// RunShared checks the store open gives against what the Limiter counts
// on: a key never saved is not found; a state reads back as saved (times
// to the microsecond); a save never moves a key's next-allowed time (nor
// its reason) earlier, and an older observation never replaces a newer
// one's budget, whatever order concurrent saves land in; keys are apart;
// and a retry-after one Limiter observed is waited for by a new Limiter
// on the same store (a restart; open is called twice, to open it as two
// processes would). open may return the same store for every call; each
// check uses keys of its own.
func RunShared(t *testing.T, open func(t *testing.T) ratelimit.Shared) {
	ctx := context.Background()
	base := time.Now().UTC().Truncate(time.Microsecond)
	key := func(t *testing.T) ratelimit.Key {
		return ratelimit.Key{Endpoint: "api.example.test", Identity: ratelimit.Identity(t.Name() + base.String()), Model: "m-" + t.Name()}
	}
	load := func(t *testing.T, s ratelimit.Shared, k ratelimit.Key) ratelimit.State {
		t.Helper()
		st, found, err := s.Load(ctx, k)
		if err != nil || !found {
			t.Fatalf("Load(%s) = found %v, %v; want the saved state", k, found, err)
		}
		return st
	}
	save := func(t *testing.T, s ratelimit.Shared, k ratelimit.Key, st ratelimit.State) {
		t.Helper()
		if err := s.Save(ctx, k, st); err != nil {
			t.Fatalf("Save(%s, %+v): %v", k, st, err)
		}
	}

	t.Run("a key never saved is not found", func(t *testing.T) {
		s := open(t)
		if _, found, err := s.Load(ctx, key(t)); found || err != nil {
			t.Errorf("Load of a key never saved = found %v, %v; want not found, no error", found, err)
		}
	})
	t.Run("a state reads back as saved", func(t *testing.T) {
		s, k := open(t), key(t)
		want := ratelimit.State{NextAllowed: base.Add(20 * time.Second), Remaining: 1, Why: "429 from api.example.test: retry after 20s", UpdatedAt: base}
		save(t, s, k, want)
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("Load = %+v, want %+v", got, want)
		}
		unbounded := ratelimit.State{Remaining: -1, UpdatedAt: base.Add(time.Second)}
		other := ratelimit.Key{Endpoint: k.Endpoint, Identity: k.Identity, Model: k.Model + "-other"}
		save(t, s, other, unbounded)
		if got := load(t, s, other); !same(got, unbounded) || !got.NextAllowed.IsZero() {
			t.Errorf("Load of a state with no next-allowed time = %+v, want %+v", got, unbounded)
		}
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("saving another model's state changed this one's: %+v, want %+v", got, want)
		}
	})
	t.Run("a save never moves the next-allowed time earlier", func(t *testing.T) {
		s, k := open(t), key(t)
		long := ratelimit.State{NextAllowed: base.Add(30 * time.Second), Remaining: 1, Why: "long", UpdatedAt: base}
		save(t, s, k, long)
		save(t, s, k, ratelimit.State{NextAllowed: base.Add(10 * time.Second), Remaining: 5, Why: "short", UpdatedAt: base.Add(time.Second)})
		want := ratelimit.State{NextAllowed: long.NextAllowed, Remaining: 5, Why: "long", UpdatedAt: base.Add(time.Second)}
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("after a shorter wait was saved: %+v, want the longer wait with the newer budget %+v", got, want)
		}
		save(t, s, k, ratelimit.State{NextAllowed: base.Add(40 * time.Second), Remaining: 9, Why: "older", UpdatedAt: base})
		want = ratelimit.State{NextAllowed: base.Add(40 * time.Second), Remaining: 5, Why: "older", UpdatedAt: base.Add(time.Second)}
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("after an older observation with a later wait: %+v, want its wait with the newer budget %+v", got, want)
		}
	})
	t.Run("concurrent saves keep the latest next-allowed time", func(t *testing.T) {
		s, k := open(t), key(t)
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			v := n - 1 - i // the latest started first, so that last-writer-wins shows
			go func() {
				defer wg.Done()
				errs <- s.Save(ctx, k, ratelimit.State{NextAllowed: base.Add(time.Duration(v) * time.Second), Remaining: int64(v), Why: fmt.Sprint(v), UpdatedAt: base.Add(time.Duration(v) * time.Millisecond)})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent Save: %v", err)
			}
		}
		want := ratelimit.State{NextAllowed: base.Add((n - 1) * time.Second), Remaining: n - 1, Why: fmt.Sprint(n - 1), UpdatedAt: base.Add((n - 1) * time.Millisecond)}
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("after %d concurrent saves: %+v, want the latest %+v", n, got, want)
		}
	})
	t.Run("a retry-after saved by one limiter is waited for by a new one", func(t *testing.T) {
		s, k := open(t), key(t)
		first := &ratelimit.Limiter{Shared: open(t)}
		o := ratelimit.Observation{At: time.Now(), From: k.Endpoint, Status: 429, Limited: true, RetryAfter: time.Hour}
		if err := first.Observe(ctx, k, o); err != nil {
			t.Fatalf("Observe: %v", err)
		}
		saved := load(t, s, k)
		restarted := &ratelimit.Limiter{Shared: s}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var until time.Time
		var why string
		_, err := restarted.Wait(wctx, k, func(u time.Time, w string) {
			until, why = u, w
			cancel() // seen it wait: no need to wait the hour
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the new limiter's Wait = %v, want it to wait (ended by the test)", err)
		}
		if !until.Equal(saved.NextAllowed) || !strings.Contains(why, "retry after 1h") {
			t.Errorf("the new limiter waited until %v for %q; want the saved %v for the 429's retry-after", until, why, saved.NextAllowed)
		}
	})
}

// same is whether two states are equal, their times to the microsecond.
func same(a, b ratelimit.State) bool {
	return a.NextAllowed.Equal(b.NextAllowed) && a.Remaining == b.Remaining && a.Why == b.Why && a.UpdatedAt.Equal(b.UpdatedAt)
}
