package ratelimit

import (
	"context"
	"testing"
	"time"
)

// A request that never reached the provider, told at once, keeps the
// budget and holds no other: the next goes at once. One told a Probe or
// more after it went (a dial that hung) is not counted: another request
// may have gone meanwhile and taken it as lost, and counting it again
// would count that one, still in flight, as answered and let a third go
// before its answer (the review's case).
func TestAnUnreachedRequestIsCountedOnlyWithinAProbeOfItsSend(t *testing.T) {
	ctx := context.Background()
	t.Run("told at once", func(t *testing.T) {
		clock := newFakeClock(now)
		l := &Limiter{Clock: clock}
		w, err := l.Wait(ctx, testKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		sent := clock.Now()
		clock.Advance(50 * time.Millisecond)
		if err := l.ObserveUnreached(ctx, testKey, w.Ticket, sent); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-goWait(ctx, l, testKey, nil):
			if r.err != nil {
				t.Fatal(r.err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("the next request was held behind one that never reached the provider")
		}
	})
	t.Run("told after a probe, another request in flight", func(t *testing.T) {
		clock := newFakeClock(now)
		l := &Limiter{Clock: clock}
		w1, err := l.Wait(ctx, testKey, nil) // its dial hangs
		if err != nil {
			t.Fatal(err)
		}
		sent := clock.Now()
		clock.Advance(DefaultProbe)
		if _, err := l.Wait(ctx, testKey, nil); err != nil { // reaches the provider; no answer yet
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		if err := l.ObserveUnreached(ctx, testKey, w1.Ticket, sent); err != nil {
			t.Fatal(err)
		}
		if st := l.State(testKey); st.Answers >= st.Sent {
			t.Errorf("Sent %d, Answers %d: the request in flight is counted as answered", st.Sent, st.Answers)
		}
		select {
		case r := <-goWait(ctx, l, testKey, nil):
			t.Errorf("a third request went at once (%+v) while the second, which reached the provider, is unanswered", r.w)
		case <-time.After(200 * time.Millisecond):
		}
	})
}

// slowShared is a memShared whose first Spend's answer takes lat to come
// back (a store a network away): the request is let through at the
// Spend's now, and its caller learns of it lat later.
type slowShared struct {
	memShared
	clock *fakeClock
	lat   time.Duration
	n     int
}

func (s *slowShared) Spend(ctx context.Context, key Key, now time.Time, probe time.Duration) (State, bool, error) {
	st, ok, err := s.memShared.Spend(ctx, key, now, probe)
	if s.n++; s.n == 1 {
		s.clock.Advance(s.lat)
	}
	return st, ok, err
}

// The time a request went (Waited.Sent) is when its spend was asked, not
// when the store's answer came back: a dial that fails a Probe after the
// spend — though less than a Probe after Wait returned, the store a
// network away — is not told, as another request may have taken it as
// lost meanwhile (the review found it counted, with a third let through).
func TestAnUnreachedRequestIsTimedFromItsSpendNotItsWaitsReturn(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock(now)
	const lat = 300 * time.Millisecond
	store := &slowShared{clock: clock, lat: lat}
	a := &Limiter{Clock: clock, Shared: store} // the process whose dial hangs
	b := &Limiter{Clock: clock, Shared: store} // another process
	w1, err := a.Wait(ctx, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent := w1.Sent // as the spend was asked, before the store's answer came back
	if !sent.Before(clock.Now()) {
		t.Fatalf("Waited.Sent %v, want it before the store's answer came back (%v)", sent, clock.Now())
	}
	clock.Advance(DefaultProbe - lat)
	if _, err := b.Wait(ctx, testKey, nil); err != nil { // quiet: takes w1 as lost; reaches the provider
		t.Fatal(err)
	}
	clock.Advance(lat / 2) // w1's dial fails now: Probe+lat/2 after it went
	if err := a.ObserveUnreached(ctx, testKey, w1.Ticket, sent); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := store.Load(ctx, testKey); st.Answers >= st.Sent {
		t.Errorf("store: Sent %d, Answers %d: the request in flight is counted as answered", st.Sent, st.Answers)
	}
	select {
	case r := <-goWait(ctx, b, testKey, nil):
		t.Errorf("a third request went at once (%+v) while the second is unanswered", r.w)
	case <-time.After(200 * time.Millisecond):
	}
}
