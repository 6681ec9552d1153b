package ratelimit

import (
	"context"
	"testing"
	"time"
)

// A request that never reached the provider keeps the budget and holds
// no other while it is the newest sent — told at once, or after a dial
// that hung past a Probe with nothing sent since: the next goes at once.
// Told after another request went, it is not counted: that one's spend
// may have taken it as lost, and counting it again would count that one,
// still in flight, as answered and let a third go before its answer
// (the review's case, also with the answer's save landing late at a
// store: the rule is applied where the answer is, State.Apply).
func TestAnUnreachedRequestCountsOnlyWhileItIsTheNewestSent(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		after      time.Duration // from the request to its failure
		another    bool          // another request went meanwhile, a Probe after it
		nextAtOnce bool
	}{
		{"told at once", 50 * time.Millisecond, false, true},
		{"a dial that hung past a probe, nothing sent since", 2 * DefaultProbe, false, true},
		{"told after another request went", DefaultProbe + time.Second, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newFakeClock(now)
			l := &Limiter{Clock: clock}
			w, err := l.Wait(ctx, testKey, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.another {
				clock.Advance(DefaultProbe)
				if _, err := l.Wait(ctx, testKey, nil); err != nil { // reaches the provider; no answer yet
					t.Fatal(err)
				}
				clock.Advance(c.after - DefaultProbe)
			} else {
				clock.Advance(c.after)
			}
			if err := l.ObserveUnreached(ctx, testKey, w.Ticket); err != nil {
				t.Fatal(err)
			}
			st := l.State(testKey)
			if c.another && st.Answers >= st.Sent {
				t.Errorf("Sent %d, Answers %d: the request in flight is counted as answered", st.Sent, st.Answers)
			}
			select {
			case r := <-goWait(ctx, l, testKey, nil):
				if !c.nextAtOnce {
					t.Errorf("the next request went at once (%+v) while one that reached the provider is unanswered", r.w)
				}
			case <-time.After(300 * time.Millisecond):
				if c.nextAtOnce {
					t.Error("the next request was held behind one that never reached the provider")
				}
			}
		})
	}
}
