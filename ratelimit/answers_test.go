package ratelimit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// An error answer that names no limits (a 502 or a 529 from a gateway
// without limit headers, an error read from inside a stream) says
// nothing of the requests left: the budget stays as it was, and the
// requests held for want of it stay held while others are in flight.
func TestAnErrorAnswerWithoutLimitsKeepsTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Observation
	}{
		{"a 529 without headers", Observation{At: now, Status: 529, Overloaded: true}},
		{"a 502 without headers", Observation{At: now, Status: 502, ServerFault: true}},
		{"a 400", Observation{At: now, Status: 400}},
		{"an error inside a stream", Observation{At: now, Error: "api_error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock(now)
			l := &Limiter{Clock: clock}
			ctx := context.Background()
			w1, _ := l.Wait(ctx, testKey, nil)
			_ = l.ObserveAnswer(ctx, testKey, w1.Ticket, left(now, 3))
			var sent []Waited
			for range 3 { // the whole budget
				w, _ := l.Wait(ctx, testKey, nil)
				sent = append(sent, w)
			}
			if err := l.ObserveAnswer(ctx, testKey, sent[0].Ticket, tc.o); err != nil {
				t.Fatalf("ObserveAnswer: %v", err)
			}
			if st := l.State(testKey); st.Remaining != 0 || st.Answered != w1.Ticket.N {
				t.Errorf("after %s, 2 requests in flight: remaining %d set by ticket %d; want the budget as it was: 0, set by ticket %d", tc.name, st.Remaining, st.Answered, w1.Ticket.N)
			}
			res := goWait(ctx, l, testKey, nil)
			clock.waiting(t, 1)
			none(t, res, "a request after the budget was spent and one of its requests answered by "+tc.name)
		})
	}
}

// An error answer without limits that leaves no budget and no request in
// flight lets one go first (the failed request's retry), as a 429
// naming no time does: no answer is coming to set the budget, and the
// others stay held until that one's answer.
func TestAnErrorAnswerWithoutLimitsLetsOneGoWhenNoneIsInFlight(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	ctx := context.Background()
	w1, _ := l.Wait(ctx, testKey, nil)
	_ = l.ObserveAnswer(ctx, testKey, w1.Ticket, left(now, 1))
	w2, _ := l.Wait(ctx, testKey, nil) // the last of the budget
	if err := l.ObserveAnswer(ctx, testKey, w2.Ticket, Observation{At: now, Status: 529, Overloaded: true}); err != nil {
		t.Fatalf("ObserveAnswer: %v", err)
	}
	first, second := goWait(ctx, l, testKey, nil), goWait(ctx, l, testKey, nil)
	var held <-chan result
	select {
	case <-first:
		held = second
	case <-second:
		held = first
	case <-time.After(10 * time.Second):
		t.Fatal("no request went after a 529 without headers answered the last one in flight")
	}
	clock.waiting(t, 1)
	none(t, held, "a second request after a 529 without headers, before the first's answer")
}

// The same answer saved to a store leaves the store's budget as it was.
func TestAnErrorAnswerWithoutLimitsKeepsTheStoresBudget(t *testing.T) {
	clock := newFakeClock(now)
	store := &memShared{}
	a := &Limiter{Shared: store, Clock: clock}
	ctx := context.Background()
	w1, _ := a.Wait(ctx, testKey, nil)
	_ = a.ObserveAnswer(ctx, testKey, w1.Ticket, left(now, 3))
	w2, _ := a.Wait(ctx, testKey, nil)
	if err := a.ObserveAnswer(ctx, testKey, w2.Ticket, Observation{At: now, Status: 529, Overloaded: true}); err != nil {
		t.Fatalf("ObserveAnswer: %v", err)
	}
	if st, _, _ := store.Load(ctx, testKey); st.Remaining != 2 || st.Answers != 2 || st.Answered != 1 {
		t.Errorf("the store after a 529 without headers: remaining %d set by ticket %d, answers %d; want the budget as it was (2, ticket 1's) and the answer counted (2)", st.Remaining, st.Answered, st.Answers)
	}
}

// A stored next-allowed time beyond MaxWait is cut to MaxWait once: the
// same stored time read again at every poll does not move the wait
// later, so the waiter is told of it once.
func TestAStoredTimeBeyondMaxWaitIsToldOnce(t *testing.T) {
	clock := newFakeClock(now)
	store := &memShared{states: map[Key]State{testKey: {NextAllowed: now.Add(1000 * time.Hour), Remaining: 1, Why: "broken", UpdatedAt: now}}}
	l := &Limiter{Shared: store, Clock: clock}
	var n notes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := goWait(ctx, l, testKey, &n)
	clock.waiting(t, 1)
	for range 3 {
		if r, done := step(t, clock, DefaultPoll, res); done {
			t.Fatalf("the waiter went while the store's time was 1000h off: %+v", r)
		}
	}
	if until, _ := n.get(); len(until) != 1 || !until[0].Equal(now.Add(MaxWait)) {
		t.Errorf("after 3 polls reading the same stored time the waiter was told %v; want once, %v", until, now.Add(MaxWait))
	}
	// A later stored time is news again.
	store.mu.Lock()
	store.states[testKey] = State{NextAllowed: now.Add(2000 * time.Hour), Remaining: 1, Why: "later", UpdatedAt: now}
	store.mu.Unlock()
	step(t, clock, DefaultPoll, res)
	if until, _ := n.get(); len(until) != 2 || !until[1].Equal(clock.Now().Add(MaxWait)) {
		t.Errorf("after the stored time moved later the waiter was told %v; want a second note, %v", until, clock.Now().Add(MaxWait))
	}
}

// A request let through by the process's own state while the store could
// not be reached has a ticket of the process's count, not the store's:
// its answer, saved once the store is back, does not set the store's
// budget, and the store's own answers go on setting it.
func TestAnAnswerToARequestLetThroughWithoutTheStoreDoesNotSetItsBudget(t *testing.T) {
	clock := newFakeClock(now)
	store := &memShared{}
	a := &Limiter{Shared: store, Clock: clock}
	b := &Limiter{Shared: store, Clock: clock}
	ctx := context.Background()
	w1, _ := a.Wait(ctx, testKey, nil)
	_ = a.ObserveAnswer(ctx, testKey, w1.Ticket, left(now, 10))
	if w, err := b.Wait(ctx, testKey, nil); err != nil || w.Ticket.N != 2 || w.Ticket.Local {
		t.Fatalf("b's request through the store: %+v, %v; want ticket 2 of the store's", w, err)
	}
	store.mu.Lock()
	store.spendErr = errors.New("store down")
	store.mu.Unlock()
	var local Waited
	for range 3 {
		w, err := b.Wait(ctx, testKey, nil)
		if err != nil || w.Shared == nil || !w.Ticket.Local {
			t.Fatalf("b's request with the store down: %+v, %v; want it let through by b's own state, its ticket local", w, err)
		}
		local = w
	}
	store.mu.Lock()
	store.spendErr = nil
	store.mu.Unlock()
	if err := b.ObserveAnswer(ctx, testKey, local.Ticket, left(now, 20)); err != nil {
		t.Fatalf("ObserveAnswer of the local ticket: %v", err)
	}
	st, _, _ := store.Load(ctx, testKey)
	if st.Answered != w1.Ticket.N || st.Remaining != 9 || st.Answers != 1 {
		t.Errorf("the store after the answer to local ticket %d: answered %d, remaining %d, answers %d; want it not to set the budget (ticket 1's 10 less ticket 2: 9) nor count as an answer the store's sends hold", local.Ticket.N, st.Answered, st.Remaining, st.Answers)
	}
	w3, err := a.Wait(ctx, testKey, nil)
	if err != nil || w3.Ticket.N != 3 {
		t.Fatalf("a's request once the store is back: %+v, %v; want the store's ticket 3", w3, err)
	}
	if err := a.ObserveAnswer(ctx, testKey, w3.Ticket, left(now, 7)); err != nil {
		t.Fatalf("ObserveAnswer: %v", err)
	}
	if st, _, _ := store.Load(ctx, testKey); st.Answered != 3 || st.Remaining != 7-1 {
		t.Errorf("the store after the answer to its ticket 3 (7 left, ticket 2 unanswered): answered %d, remaining %d; want it to set the budget: 6", st.Answered, st.Remaining)
	}
	if w, err := b.Wait(ctx, testKey, nil); err != nil || w.Ticket.N != 4 || w.Ticket.Local || w.Shared != nil {
		t.Errorf("b's request once the store is back: %+v, %v; want the store's ticket 4, not its own count's", w, err)
	}
}

// hungShared is a Shared store whose every call hangs until its context
// ends, as a pool with no connection to give.
type hungShared struct{}

func (hungShared) Load(ctx context.Context, _ Key) (State, bool, error) {
	<-ctx.Done()
	return State{}, false, ctx.Err()
}

func (hungShared) Spend(ctx context.Context, _ Key, _ time.Time, _ time.Duration) (State, bool, error) {
	<-ctx.Done()
	return State{}, false, ctx.Err()
}

func (hungShared) Save(ctx context.Context, _ Key, _ Answer) (State, error) {
	<-ctx.Done()
	return State{}, ctx.Err()
}

// A store that hangs is given up after StoreTimeout, as one that cannot
// be reached: the process goes by its own state and says so.
func TestAStoreThatHangsIsGivenUpAfterStoreTimeout(t *testing.T) {
	l := &Limiter{Shared: hungShared{}, Clock: newFakeClock(now), StoreTimeout: 20 * time.Millisecond}
	ctx := context.Background()
	res := goWait(ctx, l, testKey, nil)
	r := receive(t, res, "a Wait whose store hangs")
	if r.err != nil || !errors.Is(r.w.Shared, context.DeadlineExceeded) || !r.w.Ticket.Local {
		t.Fatalf("Wait with a hung store = %+v, %v; want it let through by the process's own state, Waited.Shared wrapping the deadline", r.w, r.err)
	}
	done := make(chan error, 1)
	go func() { done <- l.ObserveAnswer(ctx, testKey, r.w.Ticket, refused(now, 5*time.Second)) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), testKey.String()) {
			t.Errorf("ObserveAnswer with a hung store = %v; want an error naming the key wrapping the deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ObserveAnswer with a hung store did not return")
	}
	// Waiting on a known time reads the store (Load): bounded as well.
	res = goWait(ctx, l, testKey, nil)
	clock := l.Clock.(*fakeClock)
	clock.waiting(t, 1)
	clock.Advance(5 * time.Second)
	if r := receive(t, res, "a Wait past the retry-after whose store hangs"); r.err != nil || !errors.Is(r.w.Shared, context.DeadlineExceeded) {
		t.Errorf("Wait past the retry-after with a hung store = %+v, %v; want it to go, Waited.Shared wrapping the deadline", r.w, r.err)
	}
}
