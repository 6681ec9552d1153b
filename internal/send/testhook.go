package send

import (
	"context"
	"sync/atomic"
	"time"
)

// newSleep, when set, is the wait before a retry of every Sender New
// makes (NoWaitsForTests); else Sleep.
var newSleep atomic.Pointer[func(ctx context.Context, d time.Duration) error]

// NoWaitsForTests makes every Sender New makes, until restore is called
// (which gives back the setting before, so that calls may nest),
// retry without waiting its backoff (a wait still ends at once with
// ctx's error when ctx is done): a wire's tests that go through its
// retries need not take their real time. It is for tests only, in a test
// that does not run in parallel with another; a wire's own code must not
// call it.
func NoWaitsForTests() (restore func()) {
	noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	previous := newSleep.Swap(&noWait)
	return func() { newSleep.Store(previous) }
}

// sleeper is the wait before a retry for a Sender New makes now.
func sleeper() func(ctx context.Context, d time.Duration) error {
	if f := newSleep.Load(); f != nil {
		return *f
	}
	return Sleep
}
