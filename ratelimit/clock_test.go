package ratelimit

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when a test advances it, so that
// the limiter's tests wait for no real time. It counts the timers made
// and those still pending, which tells a test that its waiters are back
// waiting.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]bool
	created int
	changed chan struct{}
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock(start time.Time) *fakeClock {
	return &fakeClock{now: start, timers: map[*fakeTimer]bool{}, changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), c: make(chan time.Time, 1)}
	c.created++
	if d <= 0 {
		t.c <- c.now
	} else {
		c.timers[t] = true
	}
	c.signal()
	return t.c, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.timers, t)
		c.signal()
	}
}

// Advance moves the clock by d and fires the timers due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			t.c <- c.now
			delete(c.timers, t)
		}
	}
	c.signal()
}

func (c *fakeClock) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitFor blocks until ok holds of the pending timers and of those made
// so far, failing the test if it does not within a bound far beyond any
// real schedule (a hang, not a timing).
func (c *fakeClock) waitFor(t *testing.T, what string, ok func(pending, created int) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		done, changed := ok(len(c.timers), c.created), c.changed
		pending, created := len(c.timers), c.created
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("gave up waiting for %s: %d timers pending, %d made", what, pending, created)
		}
	}
}

// waiting blocks until n waiters are waiting on the clock.
func (c *fakeClock) waiting(t *testing.T, n int) {
	t.Helper()
	c.waitFor(t, "waiters", func(pending, _ int) bool { return pending == n })
}

// made is how many timers were made so far.
func (c *fakeClock) made() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.created
}
