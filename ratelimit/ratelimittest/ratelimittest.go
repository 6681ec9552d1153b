// Package ratelimittest checks a ratelimit.Shared store against what the
// Limiter counts on (RunShared), and gives tests one in memory (Memory).
// It is for tests only; it must not be imported by production code.
package ratelimittest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/ratelimit"
)

// Memory is a ratelimit.Shared in memory, as processes sharing one
// database would see it: each method is one step under its lock, by the
// State's own Spend and Apply. It decides by its callers' times (Spend's
// now, an answer's At as given): it lives in one process, whose limiters
// share one clock, unlike a database's hosts. Its zero value is ready to
// use.
type Memory struct {
	mu     sync.Mutex
	states map[ratelimit.Key]ratelimit.State
}

// Load is key's state.
func (m *Memory) Load(_ context.Context, key ratelimit.Key) (ratelimit.State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[key]
	return st, ok, nil
}

// Spend lets one request of key go at now when its state allows it
// (ratelimit.State.Spend), keeping the state after.
func (m *Memory) Spend(_ context.Context, key ratelimit.Key, now time.Time, probe time.Duration) (ratelimit.State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[key].Spend(now, probe)
	if ok {
		m.put(key, st)
	}
	return st, ok, nil
}

// Save applies a to key's state (ratelimit.State.Apply) and returns the
// state after.
func (m *Memory) Save(_ context.Context, key ratelimit.Key, a ratelimit.Answer) (ratelimit.State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[key].Apply(a)
	m.put(key, st)
	return st, nil
}

func (m *Memory) put(key ratelimit.Key, st ratelimit.State) {
	if m.states == nil {
		m.states = map[ratelimit.Key]ratelimit.State{}
	}
	m.states[key] = st
}

// RunShared checks the store open gives against what the Limiter counts
// on: a key never saved is not found; a key nothing is known of lets one
// request go first; an answer reads back as applied (times to the
// microsecond), its budget counting the sends after its own request, an
// older answer never overwriting a newer one's budget, a budget so spent
// waiting for the answer's reset; a save never moves a key's next-allowed
// time earlier, whatever order concurrent saves land in; concurrent
// spends, from several handles of the store (open called again, as
// processes would), never grant more than the budget, each with a ticket
// of its own, and limiters sharing the store spend one budget; the store
// applies any run of spends and answers as ratelimit.State's Spend and
// Apply do (answers that keep the budget and answers to local tickets
// among them), by the times it is given — a store that keeps its own
// clock is checked on a handle timed by its callers' times; keys are apart; and a retry-after one Limiter observed is
// waited for by a new Limiter on the same store (a restart). open may
// return the same store for every call; each check uses keys of its own.
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
	save := func(t *testing.T, s ratelimit.Shared, k ratelimit.Key, a ratelimit.Answer) ratelimit.State {
		t.Helper()
		st, err := s.Save(ctx, k, a)
		if err != nil {
			t.Fatalf("Save(%s, %+v): %v", k, a, err)
		}
		return st
	}
	spend := func(t *testing.T, s ratelimit.Shared, k ratelimit.Key, now time.Time, probe time.Duration) (ratelimit.State, bool) {
		t.Helper()
		st, ok, err := s.Spend(ctx, k, now, probe)
		if err != nil {
			t.Fatalf("Spend(%s, %v): %v", k, now, err)
		}
		return st, ok
	}
	sec := func(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }
	tk := func(n, unanswered int64) ratelimit.Ticket { return ratelimit.Ticket{N: n, Unanswered: unanswered} }

	t.Run("a key never saved is not found", func(t *testing.T) {
		s := open(t)
		if _, found, err := s.Load(ctx, key(t)); found || err != nil {
			t.Errorf("Load of a key never saved = found %v, %v; want not found, no error", found, err)
		}
	})
	t.Run("a key nothing is known of lets one request go first", func(t *testing.T) {
		s, k := open(t), key(t)
		st, ok := spend(t, s, k, sec(0), time.Minute)
		want := ratelimit.State{Sent: 1, LastSent: sec(0)}
		if !ok || !same(st, want) {
			t.Fatalf("the first Spend of a key = %v %+v, want granted with ticket 1: %+v", ok, st, want)
		}
		if st, ok := spend(t, s, k, sec(1), time.Minute); ok || !same(st, want) {
			t.Errorf("a second Spend before any answer = %v %+v, want refused by %+v", ok, st, want)
		}
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("Load after the first Spend = %+v, want %+v", got, want)
		}
		want = ratelimit.State{Sent: 2, Answers: 1, LastSent: sec(60)} // the first, unanswered, taken as lost
		if st, ok := spend(t, s, k, sec(60), time.Minute); !ok || !same(st, want) {
			t.Errorf("a Spend a probe after the first, no answer come = %v %+v, want granted: %+v", ok, st, want)
		}
	})
	t.Run("an answer reads back as applied", func(t *testing.T) {
		s, k := open(t), key(t)
		a := ratelimit.Answer{At: sec(0), NextAllowed: sec(20), Why: "429 from api.example.test: retry after 20s", Remaining: 1, First: true}
		want := ratelimit.State{}.Apply(a)
		if got := save(t, s, k, a); !same(got, want) {
			t.Errorf("Save of an answer = %+v, want %+v", got, want)
		}
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("Load = %+v, want %+v", got, want)
		}
		other := ratelimit.Key{Endpoint: k.Endpoint, Identity: k.Identity, Model: k.Model + "-other"}
		unbounded := ratelimit.Answer{At: sec(1), Remaining: -1}
		save(t, s, other, unbounded)
		if got := load(t, s, other); !same(got, ratelimit.State{Remaining: -1, UpdatedAt: sec(1), Answers: 1}) || !got.NextAllowed.IsZero() {
			t.Errorf("Load of an answer with no bound and no wait = %+v, want Remaining -1 and no next-allowed time", got)
		}
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("saving another model's answer changed this one's: %+v, want %+v", got, want)
		}
	})
	t.Run("an unreached request counts as answered only while it is the newest sent", func(t *testing.T) {
		s, k := open(t), key(t)
		spend(t, s, k, sec(0), time.Minute) // ticket 1, whose dial fails
		unreached := ratelimit.Answer{Ticket: tk(1, 0), At: sec(1), KeepsBudget: true, Unreached: true}
		if st := save(t, s, k, unreached); st.Answers != 1 || st.Remaining != 1 {
			t.Fatalf("ticket 1 never reached the provider, none sent after it: %+v, want answered and one to go (Remaining 1)", st)
		}
		spend(t, s, k, sec(2), time.Minute)  // ticket 2, whose dial hangs
		spend(t, s, k, sec(70), time.Minute) // ticket 3, a probe later: ticket 2 taken as lost (Answers 2)
		late := ratelimit.Answer{Ticket: tk(2, 0), At: sec(90), KeepsBudget: true, Unreached: true}
		st := save(t, s, k, late)
		if st.Answers != 2 || st.Remaining != 0 {
			t.Errorf("ticket 2's dial failed after ticket 3 went: %+v, want it not counted (Answers 2) and none let go before ticket 3's answer (Remaining 0)", st)
		}
		// two side by side, budget to spare, both refused, the older told
		// first: both counted, and one goes
		k2 := ratelimit.Key{Endpoint: k.Endpoint, Identity: k.Identity, Model: k.Model + "-side-by-side"}
		save(t, s, k2, ratelimit.Answer{Ticket: tk(0, 0), At: sec(0), Remaining: 5}) // a budget
		spend(t, s, k2, sec(1), time.Minute)                                         // ticket 1
		spend(t, s, k2, sec(1), time.Minute)                                         // ticket 2
		save(t, s, k2, ratelimit.Answer{Ticket: tk(1, 0), At: sec(2), KeepsBudget: true, Unreached: true})
		if st := save(t, s, k2, ratelimit.Answer{Ticket: tk(2, 1), At: sec(2), KeepsBudget: true, Unreached: true}); st.Answers != st.Sent {
			t.Errorf("two requests side by side, both unreached, the older told first: %+v, want both counted (Answers = Sent)", st)
		}
	})
	t.Run("an answer's budget counts the requests sent after its own", func(t *testing.T) {
		s, k := open(t), key(t)
		spend(t, s, k, sec(0), time.Hour) // ticket 1
		if st := save(t, s, k, ratelimit.Answer{Ticket: tk(1, 0), At: sec(1), Remaining: 5}); st.Remaining != 5 || st.Answered != 1 {
			t.Fatalf("the answer to the only request, 5 left: %+v, want Remaining 5", st)
		}
		for i := 2; i <= 4; i++ {
			if st, ok := spend(t, s, k, sec(1), time.Hour); !ok || st.Sent != int64(i) {
				t.Fatalf("Spend %d of a budget of 5: %v %+v, want granted with ticket %d", i, ok, st, i)
			}
		}
		if st := save(t, s, k, ratelimit.Answer{Ticket: tk(2, 0), At: sec(2), Remaining: 4}); st.Remaining != 2 || st.Answered != 2 || st.Answers != 2 {
			t.Errorf("the answer to ticket 2 of 4 sent, 4 left: Remaining %d (answered %d), want 4 less the 2 sent after it: 2", st.Remaining, st.Answered)
		}
		if st := save(t, s, k, ratelimit.Answer{Ticket: tk(1, 0), At: sec(3), Remaining: 9}); st.Remaining != 2 || st.Answered != 2 {
			t.Errorf("an answer to the older ticket 1 arriving late: Remaining %d (answered %d), want ticket 2's 2 kept", st.Remaining, st.Answered)
		}
		reset := sec(30)
		st := save(t, s, k, ratelimit.Answer{Ticket: tk(3, 1), At: sec(4), Remaining: 2, Reset: reset, ResetWhy: "requests: the 2 left are sent, until then"})
		want := ratelimit.State{NextAllowed: reset, Remaining: 1, Why: "requests: the 2 left are sent, until then", UpdatedAt: sec(4), Sent: 4, Answered: 3, Answers: 4, LastSent: sec(1)}
		if !same(st, want) {
			t.Errorf("an answer whose budget the sends after it spent, naming a reset: %+v, want a wait until the reset, then one: %+v", st, want)
		}
		if _, ok := spend(t, s, k, reset.Add(-time.Millisecond), time.Millisecond); ok {
			t.Errorf("a Spend before the reset was granted")
		}
		if st, ok := spend(t, s, k, reset, time.Hour); !ok || st.Sent != 5 || st.Remaining != 0 {
			t.Errorf("the Spend at the reset: %v %+v, want granted, the one going first", ok, st)
		}
	})
	t.Run("an answer's budget counts the requests before its own unanswered when it went", func(t *testing.T) {
		s, k := open(t), key(t)
		spend(t, s, k, sec(0), time.Hour)
		save(t, s, k, ratelimit.Answer{Ticket: tk(1, 0), At: sec(1), Remaining: 10})
		var tickets []ratelimit.Ticket
		for range 2 {
			st, _ := spend(t, s, k, sec(1), time.Hour)
			tickets = append(tickets, st.Ticket())
		}
		if tickets[0] != tk(2, 0) || tickets[1] != tk(3, 1) {
			t.Fatalf("the tickets of two requests after an answer: %+v, want {2 0} and {3 1} (the second going with the first unanswered)", tickets)
		}
		if st := save(t, s, k, ratelimit.Answer{Ticket: tickets[1], At: sec(2), Remaining: 8}); st.Remaining != 7 {
			t.Errorf("the answer to ticket 3 saying 8 left, ticket 2 unanswered when it went: Remaining %d, want 7 (ticket 2 may reach the provider after it)", st.Remaining)
		}
		spend(t, s, k, sec(2), time.Hour) // ticket 4 goes with ticket 2 unanswered
		st, ok := spend(t, s, k, sec(2).Add(time.Hour), time.Hour)
		if !ok || st.Ticket() != tk(5, 0) {
			t.Errorf("a request a probe after the last, two unanswered: %v, ticket %+v; want it to go with none counted unanswered (taken as lost): {5 0}", ok, st.Ticket())
		}
	})
	t.Run("a save never moves the next-allowed time earlier", func(t *testing.T) {
		s, k := open(t), key(t)
		save(t, s, k, ratelimit.Answer{At: sec(0), NextAllowed: sec(30), Why: "long", Remaining: 1})
		st := save(t, s, k, ratelimit.Answer{Ticket: tk(1, 0), At: sec(1), NextAllowed: sec(10), Why: "short", Remaining: 1})
		if !st.NextAllowed.Equal(sec(30)) || st.Why != "long" {
			t.Errorf("after a shorter wait was saved: next %v %q, want the longer %v %q", st.NextAllowed, st.Why, sec(30), "long")
		}
		st = save(t, s, k, ratelimit.Answer{Ticket: tk(2, 0), At: sec(2), Remaining: 40})
		if !st.NextAllowed.Equal(sec(30)) || st.Why != "long" || st.Remaining != 1 {
			t.Errorf("after an answer saying 40 left: next %v %q, remaining %d; want the wait kept, with 1 to go first", st.NextAllowed, st.Why, st.Remaining)
		}
		st = save(t, s, k, ratelimit.Answer{At: sec(0), NextAllowed: sec(40), Why: "older", Remaining: 1})
		if !st.NextAllowed.Equal(sec(40)) || st.Why != "older" || st.Answered != 2 || !st.UpdatedAt.Equal(sec(2)) {
			t.Errorf("after an older answer with a later wait: %+v; want its wait, the newer answer's ticket and time", st)
		}
	})
	t.Run("concurrent saves keep the latest next-allowed time and the newest answer's budget", func(t *testing.T) {
		s, times, budgets := open(t), key(t), key(t)
		budgets.Model += "-budgets"
		const n = 16
		handles := []ratelimit.Shared{s, open(t), open(t), open(t)}
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := range n {
			v := n - 1 - i // the latest started first, so that last-writer-wins shows
			h := handles[i%len(handles)]
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := h.Save(ctx, times, ratelimit.Answer{Ticket: tk(int64(v), 0), At: base, NextAllowed: sec(v + 1), Why: fmt.Sprint(v), Remaining: 1})
				errs <- err
			}()
			go func() {
				defer wg.Done()
				_, err := h.Save(ctx, budgets, ratelimit.Answer{Ticket: tk(int64(v), 0), At: base, Remaining: int64(10 * v)})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent Save: %v", err)
			}
		}
		if got := load(t, s, times); !got.NextAllowed.Equal(sec(n)) || got.Why != fmt.Sprint(n-1) {
			t.Errorf("after %d concurrent saves: next %v %q, want the latest %v %q", n, got.NextAllowed, got.Why, sec(n), fmt.Sprint(n-1))
		}
		if got := load(t, s, budgets); got.Remaining != 10*(n-1) || got.Answered != n-1 {
			t.Errorf("after %d concurrent answers: remaining %d of ticket %d, want the newest ticket's %d", n, got.Remaining, got.Answered, 10*(n-1))
		}
	})
	t.Run("concurrent spends never grant more than the budget", func(t *testing.T) {
		k := key(t)
		const budget, processes, each = 7, 4, 8
		save(t, open(t), k, ratelimit.Answer{At: base, Remaining: budget})
		var mu sync.Mutex
		tickets := map[int64]bool{}
		var wg sync.WaitGroup
		errs := make(chan error, processes*each)
		for range processes {
			s := open(t)
			for range each {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, ok, err := s.Spend(ctx, k, base, time.Hour)
					if err != nil || !ok {
						errs <- err
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if tickets[st.Sent] {
						errs <- fmt.Errorf("ticket %d granted twice", st.Sent)
					}
					tickets[st.Sent] = true
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent Spend: %v", err)
			}
		}
		if len(tickets) != budget {
			t.Errorf("%d concurrent spends from %d handles granted %d, want the budget, %d", processes*each, processes, len(tickets), budget)
		}
		if got := load(t, open(t), k); got.Sent != budget || got.Remaining != 0 {
			t.Errorf("after the spends: sent %d, remaining %d; want %d and 0", got.Sent, got.Remaining, budget)
		}
	})
	t.Run("limiters sharing the store spend one budget", func(t *testing.T) {
		k := key(t)
		limiters := make([]*ratelimit.Limiter, 3)
		for i := range limiters {
			limiters[i] = &ratelimit.Limiter{Shared: open(t), Poll: time.Hour, Probe: time.Hour}
		}
		// waitAll has each limiter wait 4 times at once and returns, once
		// every Wait has gone or started waiting, the tickets of those
		// that went, ending the rest.
		waitAll := func() []ratelimit.Ticket {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			type outcome struct {
				ticket ratelimit.Ticket
				waits  bool
			}
			out := make(chan outcome, 3*4)
			for _, l := range limiters {
				for range 4 {
					go func() {
						w, err := l.Wait(wctx, k, func(time.Time, string) { out <- outcome{waits: true} })
						if err == nil {
							out <- outcome{ticket: w.Ticket}
						}
					}()
				}
			}
			var went []ratelimit.Ticket
			for range 3 * 4 {
				if o := <-out; !o.waits {
					went = append(went, o.ticket)
				}
			}
			return went
		}
		if went := waitAll(); len(went) != 1 || went[0] != tk(1, 0) {
			t.Fatalf("12 requests of a key nothing is known of, at 3 limiters: tickets %v went, want one, ticket 1", went)
		}
		if err := limiters[0].ObserveAnswer(ctx, k, tk(1, 0), ratelimit.Observation{At: time.Now(), Status: 200, Requests: ratelimit.Dimension{Remaining: 5, HasRemaining: true}}); err != nil {
			t.Fatalf("ObserveAnswer: %v", err)
		}
		if went := waitAll(); len(went) != 5 {
			t.Errorf("12 requests at 3 limiters after an answer saying 5 left: %d went (tickets %v), want 5", len(went), went)
		}
	})
	t.Run("the store applies spends and answers as State does", func(t *testing.T) {
		s, k := open(t), key(t)
		var want ratelimit.State
		seed := uint64(base.UnixNano())
		rng := rand.New(rand.NewPCG(seed, 32))
		now := base
		for i := range 80 {
			now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
			if rng.IntN(2) == 0 {
				probe := time.Duration(rng.IntN(3)) * time.Second
				wantSt, wantOK := want.Spend(now, probe)
				st, ok := spend(t, s, k, now, probe)
				if ok != wantOK || !same(st, wantSt) {
					t.Fatalf("step %d (seed %d), Spend at +%v, probe %v: %v %+v; want %v %+v", i, seed, now.Sub(base), probe, ok, st, wantOK, wantSt)
				}
				if ok {
					want = wantSt
				}
				continue
			}
			a := ratelimit.Answer{Ticket: tk(max(0, want.Sent-int64(rng.IntN(3))), int64(rng.IntN(3))), At: now.Add(-time.Duration(rng.IntN(500)) * time.Millisecond), Why: fmt.Sprint("why ", i), Remaining: int64(rng.IntN(5)) - 1}
			if rng.IntN(4) == 0 {
				a.NextAllowed, a.First = now.Add(time.Duration(rng.IntN(3000))*time.Millisecond), true
			} else if rng.IntN(6) == 0 {
				a.First = true
			}
			if rng.IntN(2) == 0 {
				a.Reset, a.ResetWhy = now.Add(time.Duration(rng.IntN(4000)-1000)*time.Millisecond), fmt.Sprint("reset ", i)
			}
			// an error answer without limits, and one to a ticket the
			// process handed out without the store
			a.KeepsBudget, a.Ticket.Local = rng.IntN(5) == 0, rng.IntN(6) == 0
			// and a refusal inside a stream, whose request was answered
			// when its stream began (Limiter.ObserveInStream)
			a.Again = rng.IntN(6) == 0
			want = want.Apply(a)
			if got := save(t, s, k, a); !same(got, want) {
				t.Fatalf("step %d (seed %d), Save of %+v: %+v; want %+v", i, seed, a, got, want)
			}
		}
		if got := load(t, s, k); !same(got, want) {
			t.Errorf("Load after the run (seed %d): %+v, want %+v", seed, got, want)
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
	return a.NextAllowed.Equal(b.NextAllowed) && a.Remaining == b.Remaining && a.Why == b.Why && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.Sent == b.Sent && a.Answered == b.Answered && a.Answers == b.Answers && a.LastSent.Equal(b.LastSent)
}
