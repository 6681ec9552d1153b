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
