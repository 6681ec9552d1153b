package background

import "time"

// Clock is the time a Manager keeps: when scripts started, when a wake is
// due, when a lifetime ends, how long sleep(ms) waits. Tests give one they
// move by hand; nothing here reads the time otherwise.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f on a goroutine of its own once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop keeps f from being called, and reports whether it did.
	Stop() bool
}

// RealClock is the system's clock.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
