package ratelimit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var testKey = Key{Endpoint: "api.anthropic.com", Identity: "k:0123456789ab", Model: "claude-test"}

// refused is a 429 read at t asking to retry after d.
func refused(t time.Time, d time.Duration) Observation {
	return Observation{At: t, From: "api.anthropic.com", Status: 429, Limited: true, RetryAfter: d}
}

// left is a 200 read at t saying n requests are left.
func left(t time.Time, n int64) Observation {
	return Observation{At: t, From: "api.anthropic.com", Status: 200, Requests: Dimension{Remaining: n, HasRemaining: true}}
}

type result struct {
	w   Waited
	err error
}

// notes records what a Wait's Notify was told.
type notes struct {
	mu    sync.Mutex
	until []time.Time
	why   []string
}

func (n *notes) notify(until time.Time, why string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.until = append(n.until, until)
	n.why = append(n.why, why)
}

func (n *notes) get() ([]time.Time, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]time.Time(nil), n.until...), append([]string(nil), n.why...)
}

// goWait runs l.Wait(ctx, key) in a goroutine; its result comes on the
// channel returned.
func goWait(ctx context.Context, l *Limiter, key Key, n *notes) <-chan result {
	res := make(chan result, 1)
	var notify Notify
	if n != nil {
		notify = n.notify
	}
	go func() {
		w, err := l.Wait(ctx, key, notify)
		res <- result{w, err}
	}()
	return res
}

// receive takes one result, failing if none comes (a hang).
func receive(t *testing.T, res <-chan result, what string) result {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Wait did not return", what)
		return result{}
	}
}

// none fails if a result is ready.
func none(t *testing.T, res <-chan result, what string) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("%s: Wait returned (%+v, %v) but should still wait", what, r.w, r.err)
	default:
	}
}

func TestWaitGoesAtOnceWhenNothingWasObserved(t *testing.T) {
	var l Limiter
	var n notes
	w, err := l.Wait(context.Background(), testKey, n.notify)
	if err != nil {
		t.Fatalf("Wait with nothing observed: %v", err)
	}
	if until, _ := n.get(); len(until) != 0 || w.Why != "" || !w.Until.IsZero() {
		t.Errorf("Wait with nothing observed waited: notified %v, Waited %+v", until, w)
	}
}

func TestWaitHoldsARequestUntilTheRetryAfterHasPassed(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	if err := l.Observe(context.Background(), testKey, refused(now, 20*time.Second)); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	var n notes
	res := goWait(context.Background(), l, testKey, &n)
	clock.waiting(t, 1)
	until, why := n.get()
	wantWhy := "429 from api.anthropic.com: retry after 20s"
	if len(until) != 1 || !until[0].Equal(at(20)) || why[0] != wantWhy {
		t.Errorf("notified %v %q before waiting, want once %v %q", until, why, at(20), wantWhy)
	}
	clock.Advance(19 * time.Second)
	none(t, res, "a second before the retry-after passed")
	clock.Advance(time.Second)
	r := receive(t, res, "once the retry-after passed")
	if r.err != nil || r.w.For != 20*time.Second || !r.w.Until.Equal(at(20)) || r.w.Why != wantWhy {
		t.Errorf("Wait = %+v, %v; want 20s waited until %v for %q", r.w, r.err, at(20), wantWhy)
	}
	if until, _ := n.get(); len(until) != 1 {
		t.Errorf("Notify called %d times for one wait, want once", len(until))
	}
}

func TestWaitEndsWithTheContextAndSpendsNothing(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	_ = l.Observe(context.Background(), testKey, refused(now, 20*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	res := goWait(ctx, l, testKey, nil)
	clock.waiting(t, 1)
	cancel()
	r := receive(t, res, "after the context was cancelled")
	if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), testKey.String()) {
		t.Errorf("Wait's error = %v, want context.Canceled naming the key", r.err)
	}
	if st := l.State(testKey); st.Remaining != 1 {
		t.Errorf("a cancelled Wait spent the budget: Remaining = %d, want 1", st.Remaining)
	}
}

func TestWaitersDoNotStampedeWhenTheTimeComes(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	_ = l.Observe(context.Background(), testKey, refused(now, 5*time.Second))
	res := make(chan result, 5)
	for range 5 {
		go func() {
			w, err := l.Wait(context.Background(), testKey, nil)
			res <- result{w, err}
		}()
	}
	clock.waiting(t, 5)

	made := clock.made()
	clock.Advance(5 * time.Second)
	receive(t, res, "the first request when the retry-after passed")
	clock.waitFor(t, "4 held back", func(pending, created int) bool { return created >= made+4 && pending == 4 })
	none(t, res, "after a 429 only one request goes when its time comes")

	made = clock.made()
	_ = l.Observe(context.Background(), testKey, left(clock.Now(), 2))
	receive(t, res, "the first of 2 left")
	receive(t, res, "the second of 2 left")
	clock.waitFor(t, "2 held back", func(pending, created int) bool { return created >= made+2 && pending == 2 })
	none(t, res, "an answer saying 2 left let more than 2 go")

	_ = l.Observe(context.Background(), testKey, Observation{At: clock.Now(), Status: 200})
	receive(t, res, "the fourth once an answer set no bound")
	receive(t, res, "the fifth once an answer set no bound")
}

func TestRemainingBoundsTheRequestsSentAtOnce(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	_ = l.Observe(context.Background(), testKey, left(now, 3))
	for i := range 3 {
		if w, err := l.Wait(context.Background(), testKey, nil); err != nil || w.Why != "" {
			t.Fatalf("request %d of 3 left: Wait = %+v, %v; want no wait", i+1, w, err)
		}
	}
	var n notes
	res := goWait(context.Background(), l, testKey, &n)
	clock.waiting(t, 1)
	none(t, res, "a fourth request with 3 left")
	if _, why := n.get(); len(why) != 1 || !strings.Contains(why[0], "waiting for an answer") {
		t.Errorf("the held request was told %q, want one note saying it waits for an answer", why)
	}
}

func TestAHeldRequestGoesAfterProbeWhenNoAnswerComes(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	_ = l.Observe(context.Background(), testKey, refused(now, time.Second))
	first := goWait(context.Background(), l, testKey, nil)
	second := goWait(context.Background(), l, testKey, nil)
	clock.waiting(t, 2)
	made := clock.made()
	clock.Advance(time.Second)
	// One of the two goes; the other is held, for want of an answer.
	var held <-chan result
	select {
	case <-first:
		held = second
	case <-second:
		held = first
	case <-time.After(10 * time.Second):
		t.Fatal("neither request went when the retry-after passed")
	}
	clock.waitFor(t, "1 held back", func(pending, created int) bool { return created > made && pending == 1 })
	clock.Advance(DefaultProbe - time.Millisecond)
	none(t, held, "just before Probe without an answer")
	clock.Advance(time.Millisecond)
	if r := receive(t, held, "Probe after the last request went, without an answer"); r.err != nil {
		t.Errorf("held Wait: %v", r.err)
	}
}

func TestObserveNeverMovesTheNextAllowedTimeEarlier(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	ctx := context.Background()
	_ = l.Observe(ctx, testKey, refused(now, 30*time.Second))
	want := l.State(testKey)
	for _, tc := range []struct {
		name string
		o    Observation
	}{
		{"a 200 saying nothing", Observation{At: now, Status: 200}},
		{"a 200 saying 40 left", left(now, 40)},
		{"a shorter retry-after", refused(now, 10*time.Second)},
	} {
		_ = l.Observe(ctx, testKey, tc.o)
		st := l.State(testKey)
		if !st.NextAllowed.Equal(at(30)) || st.Why != want.Why || st.Remaining != 1 {
			t.Errorf("after %s: next %v, why %q, remaining %d; want the 429's %v %q with 1 to go first",
				tc.name, st.NextAllowed, st.Why, st.Remaining, at(30), want.Why)
		}
	}
	_ = l.Observe(ctx, testKey, refused(now, 60*time.Second))
	if st := l.State(testKey); !st.NextAllowed.Equal(at(60)) {
		t.Errorf("a longer retry-after did not move the time later: %v, want %v", st.NextAllowed, at(60))
	}
}

func TestASpentDimensionWaitsForItsResetThenLetsOneGo(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	o := left(now, 0)
	o.Requests.Reset = at(3)
	_ = l.Observe(context.Background(), testKey, o)
	first := goWait(context.Background(), l, testKey, nil)
	clock.waiting(t, 1)
	clock.Advance(3 * time.Second)
	receive(t, first, "at the reset of a spent dimension")
	second := goWait(context.Background(), l, testKey, nil)
	clock.waiting(t, 1)
	none(t, second, "a second request at the reset, before the first's answer")
}

// memShared is a Shared in memory, as two processes' limiters would see
// one Postgres table: each method one step under its lock, by State's own
// Spend and Apply (ratelimittest.Memory, which cannot be imported here).
type memShared struct {
	mu       sync.Mutex
	states   map[Key]State
	loadErr  error
	spendErr error
	saveErr  error
}

func (m *memShared) Load(_ context.Context, key Key) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loadErr != nil {
		return State{}, false, m.loadErr
	}
	st, ok := m.states[key]
	return st, ok, nil
}

func (m *memShared) Spend(_ context.Context, key Key, now time.Time, probe time.Duration) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.spendErr != nil {
		return State{}, false, m.spendErr
	}
	st, ok := m.states[key].Spend(now, probe)
	if ok {
		m.put(key, st)
	}
	return st, ok, nil
}

func (m *memShared) Save(_ context.Context, key Key, a Answer) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.saveErr != nil {
		return State{}, m.saveErr
	}
	st := m.states[key].Apply(a)
	m.put(key, st)
	return st, nil
}

func (m *memShared) put(key Key, st State) {
	if m.states == nil {
		m.states = map[Key]State{}
	}
	m.states[key] = st
}

// step advances clock by d and returns the Wait's result if it returned,
// or waits until it is waiting on the clock again. It watches the result
// and the clock at once: a Wait returning signals nothing on the clock.
func step(t *testing.T, clock *fakeClock, d time.Duration, res <-chan result) (result, bool) {
	t.Helper()
	made := clock.made()
	clock.Advance(d)
	deadline := time.After(10 * time.Second)
	for {
		clock.mu.Lock()
		again, changed := clock.created > made && len(clock.timers) == 1, clock.changed
		clock.mu.Unlock()
		select {
		case r := <-res:
			return r, true
		default:
		}
		if again {
			return result{}, false
		}
		select {
		case r := <-res:
			return r, true
		case <-changed:
		case <-deadline:
			t.Fatalf("the waiter neither returned nor waited again %v after advancing the clock", d)
		}
	}
}

func TestAnotherProcessesRetryAfterIsWaitedForThroughShared(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "two limiters at once"
		if restart {
			name = "a new limiter after a restart"
		}
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock(now)
			store := &memShared{}
			a := &Limiter{Shared: store, Clock: clock}
			b := &Limiter{Shared: store, Clock: clock}
			if restart {
				b = nil
			} else if _, err := b.Wait(context.Background(), testKey, nil); err != nil {
				t.Fatalf("b's first Wait: %v", err)
			}
			if err := a.Observe(context.Background(), testKey, refused(now, 5*time.Second)); err != nil {
				t.Fatalf("Observe: %v", err)
			}
			if restart {
				a = nil
				b = &Limiter{Shared: store, Clock: clock}
			}
			var n notes
			res := goWait(context.Background(), b, testKey, &n)
			clock.waiting(t, 1)
			if until, _ := n.get(); len(until) != 1 || !until[0].Equal(at(5)) {
				t.Fatalf("b was told %v, want the 429's retry-after saved by a: %v", until, at(5))
			}
			for i := 1; i < 5; i++ {
				if r, done := step(t, clock, time.Second, res); done {
					t.Fatalf("b went %ds after a's 429 asked for 5s: %+v", i, r)
				}
			}
			r, done := step(t, clock, time.Second, res)
			if !done || r.err != nil || r.w.For != 5*time.Second {
				t.Errorf("b after a's retry-after passed: returned %v, %+v; want 5s waited", done, r)
			}
		})
	}
}

func TestAWaitingLimiterHonoursALaterRetryAfterSavedMeanwhile(t *testing.T) {
	clock := newFakeClock(now)
	store := &memShared{}
	a := &Limiter{Shared: store, Clock: clock}
	b := &Limiter{Shared: store, Clock: clock, Poll: 10 * time.Second}
	_ = a.Observe(context.Background(), testKey, refused(now, 5*time.Second))
	var n notes
	res := goWait(context.Background(), b, testKey, &n)
	clock.waiting(t, 1)
	_ = a.Observe(context.Background(), testKey, refused(now, 30*time.Second))
	if r, done := step(t, clock, 5*time.Second, res); done {
		t.Fatalf("b went at a's first retry-after though a saved a later one meanwhile: %+v", r)
	}
	until, why := n.get()
	if len(until) != 2 || !until[1].Equal(at(30)) || !strings.Contains(why[1], "30s") {
		t.Errorf("b was told %v %q, want a second note for the later %v", until, why, at(30))
	}
	for _, d := range []time.Duration{10 * time.Second, 10 * time.Second} {
		if r, done := step(t, clock, d, res); done {
			t.Fatalf("b went at %v, before %v: %+v", clock.Now(), at(30), r)
		}
	}
	if r, done := step(t, clock, 5*time.Second, res); !done || r.w.For != 30*time.Second {
		t.Errorf("b at %v: returned %v, %+v; want 30s waited", at(30), done, r)
	}
}

func TestAStoreThatCannotBeReadLeavesTheProcessToItsOwnState(t *testing.T) {
	down := errors.New("store down")
	store := &memShared{loadErr: down, spendErr: down, saveErr: down}
	l := &Limiter{Shared: store, Clock: newFakeClock(now)}
	w, err := l.Wait(context.Background(), testKey, nil)
	if err != nil || !errors.Is(w.Shared, down) {
		t.Errorf("Wait with the store down = %+v, %v; want no error and Waited.Shared wrapping %v", w, err, down)
	}
	err = l.Observe(context.Background(), testKey, refused(now, 5*time.Second))
	if !errors.Is(err, down) || !strings.Contains(err.Error(), testKey.String()) {
		t.Errorf("Observe with the store down = %v, want an error naming the key wrapping %v", err, down)
	}
	if st := l.State(testKey); !st.NextAllowed.Equal(at(5)) {
		t.Errorf("Observe with the store down did not keep the state in the process: next %v, want %v", st.NextAllowed, at(5))
	}
}

func TestAStoredTimeBeyondMaxWaitIsTakenAsMaxWait(t *testing.T) {
	clock := newFakeClock(now)
	store := &memShared{states: map[Key]State{testKey: {NextAllowed: now.Add(1000 * time.Hour), Remaining: 1, Why: "broken", UpdatedAt: now}}}
	l := &Limiter{Shared: store, Clock: clock}
	var n notes
	ctx, cancel := context.WithCancel(context.Background())
	res := goWait(ctx, l, testKey, &n)
	clock.waiting(t, 1)
	cancel()
	receive(t, res, "after cancelling")
	if until, _ := n.get(); len(until) != 1 || !until[0].Equal(now.Add(MaxWait)) {
		t.Errorf("a stored time 1000h off was told as %v, want %v (MaxWait)", until, now.Add(MaxWait))
	}
}

func TestABudgetObservedByAnotherProcessBoundsThisOne(t *testing.T) {
	clock := newFakeClock(now)
	store := &memShared{}
	a := &Limiter{Shared: store, Clock: clock}
	b := &Limiter{Shared: store, Clock: clock}
	_ = a.Observe(context.Background(), testKey, left(now, 1))
	if w, err := b.Wait(context.Background(), testKey, nil); err != nil || w.Why != "" {
		t.Fatalf("b's first request with 1 left: Wait = %+v, %v; want no wait", w, err)
	}
	res := goWait(context.Background(), b, testKey, nil)
	clock.waiting(t, 1)
	none(t, res, "b's second request with 1 left, observed by a")
	clock.Advance(DefaultProbe)
	receive(t, res, "b's second request, Probe after its first")
}

func TestAKeyNothingIsKnownOfLetsOneRequestGoFirst(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	first, err := l.Wait(context.Background(), testKey, nil)
	if err != nil || first.Ticket != (Ticket{N: 1}) {
		t.Fatalf("the first request of a key nothing is known of: %+v, %v; want it to go, ticket 1", first, err)
	}
	var n notes
	second := goWait(context.Background(), l, testKey, &n)
	clock.waiting(t, 1)
	none(t, second, "a second request before the first's answer")
	if _, why := n.get(); len(why) != 1 || !strings.Contains(why[0], "waiting for an answer") {
		t.Errorf("the second request was told %q, want that it waits for an answer", why)
	}
	// A wire that reports no limits (Gemini, Bedrock): no bound.
	if err := l.ObserveAnswer(context.Background(), testKey, first.Ticket, Observation{At: now, Status: 200}); err != nil {
		t.Fatalf("ObserveAnswer: %v", err)
	}
	if r := receive(t, second, "once the first answer said nothing of limits"); r.err != nil || r.w.Ticket.N != 2 {
		t.Errorf("the second request: %+v, %v; want it to go, ticket 2", r.w, r.err)
	}
	for i := range 3 {
		if w, err := l.Wait(context.Background(), testKey, nil); err != nil || w.Why != "" {
			t.Errorf("request %d with no bound: %+v, %v; want it to go at once", i+3, w, err)
		}
	}
}

func TestAnAnswerCountsTheRequestsSentAfterItsOwn(t *testing.T) {
	clock := newFakeClock(now)
	l := &Limiter{Clock: clock}
	ctx := context.Background()
	first, _ := l.Wait(ctx, testKey, nil)
	_ = l.ObserveAnswer(ctx, testKey, first.Ticket, left(now, 3))
	var tickets []Ticket
	for i := range 3 {
		w, err := l.Wait(ctx, testKey, nil)
		if err != nil || w.Why != "" {
			t.Fatalf("request %d of 3 left: %+v, %v; want it to go at once", i+1, w, err)
		}
		tickets = append(tickets, w.Ticket)
	}
	// The answer to the first of the three, sent with none unanswered
	// before it, says 2 left: the two sent after it are not counted yet.
	o := left(now, 2)
	o.Requests.HasLimit, o.Requests.Limit, o.Requests.Reset = true, 50, at(4)
	_ = l.ObserveAnswer(ctx, testKey, tickets[0], o)
	st := l.State(testKey)
	wantWhy := "requests: the 2 left of 50 are sent, until 12:00:04 UTC"
	if !st.NextAllowed.Equal(at(4)) || st.Remaining != 1 || st.Why != wantWhy {
		t.Fatalf("after an answer saying 2 left with 2 sent after it: %+v; want a wait until its reset %v, for %q, then one", st, at(4), wantWhy)
	}
	var n notes
	res := goWait(ctx, l, testKey, &n)
	clock.waiting(t, 1)
	if until, why := n.get(); len(until) != 1 || !until[0].Equal(at(4)) || why[0] != wantWhy {
		t.Errorf("the next request was told %v %q, want %v %q", until, why, at(4), wantWhy)
	}
	// An answer to an older request, arriving late, does not give back
	// the budget a newer one's answer spent.
	_ = l.ObserveAnswer(ctx, testKey, first.Ticket, left(now, 40))
	if st := l.State(testKey); st.Remaining != 1 || st.Answered != tickets[0].N {
		t.Errorf("after a late answer to the first request saying 40 left: %+v; want the newer answer's budget kept", st)
	}
	clock.Advance(4 * time.Second)
	receive(t, res, "at the reset")
}

func TestLimitersSharingAStoreSpendOneBudget(t *testing.T) {
	clock := newFakeClock(now)
	store := &memShared{}
	a := &Limiter{Shared: store, Clock: clock}
	b := &Limiter{Shared: store, Clock: clock}
	ctx := context.Background()
	first, err := a.Wait(ctx, testKey, nil)
	if err != nil || first.Ticket.N != 1 {
		t.Fatalf("a's first request: %+v, %v", first, err)
	}
	res := goWait(ctx, b, testKey, nil)
	clock.waiting(t, 1)
	none(t, res, "b's first request while a's, the first of the key, has no answer")
	_ = a.ObserveAnswer(ctx, testKey, first.Ticket, left(now, 1))
	if r, done := step(t, clock, DefaultPoll, res); !done || r.w.Ticket.N != 2 {
		t.Fatalf("b's request a poll after a's answer saying 1 left: returned %v, %+v; want it to go, ticket 2", done, r)
	}
	held := goWait(ctx, a, testKey, nil)
	clock.waiting(t, 1)
	none(t, held, "a's second request once b spent the one left")
}
