package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// This file is the limiter: one gate per Key that every request of the
// process waits at, fed by what the responses said (Observe), and, with
// a Shared store, by what every other process sharing the store observed.
// The policy, in short (docs/ratelimits.md, "Limiter"):
//
//   - A key may send when its next-allowed time has passed. That time
//     only ever moves later: a response saying "go now" does not undo a
//     429's retry-after still running.
//   - It may send at most its budget at once: the requests a response said
//     were left, 1 after a wait (when the time comes one request goes
//     first, and its answer says how many more may follow), 1 after a 429
//     that said neither, no bound when nothing was said. Each request let
//     through spends one; a waiter finding none left is held until the
//     key's next Observe or, if no answer comes, Probe after the last one
//     let through, when one more goes.
//   - With a Shared store, Observe saves the key's state and Wait reads
//     it before letting a request go and every Poll while it waits, so a
//     429 seen by another process (or before a restart) is waited for here.

// DefaultPoll is how often a Wait re-reads a Shared store while it waits,
// so that a later next-allowed time saved by another process is honoured
// within it.
const DefaultPoll = time.Second

// DefaultProbe is how long a waiter held for want of budget waits for an
// answer before one more request goes: an answer's headers come back in
// well under this, so it only passes when a request failed without one.
const DefaultProbe = 2 * time.Second

// State is what a limiter knows of one key, as it keeps it and as a
// Shared store holds it. The zero State allows everything.
type State struct {
	// NextAllowed is the earliest time the key may send; zero for now.
	NextAllowed time.Time
	// Remaining is how many requests may go at once once NextAllowed has
	// passed, before an answer says more; -1 for no bound. It is the
	// budget the policy above gives, not a count the provider keeps.
	Remaining int64
	// Why says what NextAllowed or Remaining came from, in words for a
	// waiting line (Observation.Why); "" when nothing asked for a wait.
	Why string
	// UpdatedAt is when the state was last observed, by the clock of the
	// process that observed it.
	UpdatedAt time.Time
}

// Shared is where limiters of several processes keep their keys' states,
// so that they wait for each other's 429s and a retry-after outlives a
// restart. Load returns found false, and no error, for a key it has
// never saved. Save merges, whatever the order concurrent saves land in:
// it never moves a key's NextAllowed earlier than what it holds (keeping
// the Why that goes with the time kept), and keeps the Remaining of the
// later UpdatedAt. ratelimittest.RunShared checks all this. An
// implementation must hold no key, only Key's identity.
type Shared interface {
	Load(ctx context.Context, key Key) (state State, found bool, err error)
	Save(ctx context.Context, key Key, state State) error
}

// Clock is the time a Limiter waits by; nil is the real clock. Tests
// give a fake one so that nothing sleeps.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a
	// stop func that releases it early.
	After(d time.Duration) (<-chan time.Time, func())
}

// Waited is what one Wait did: how long it held the request back, until
// when it last expected to, and why (empty when it did not wait). Shared
// is the error of a Shared store that could not be read meanwhile: the
// Wait went on by the process's own state, and the caller should say so.
type Waited struct {
	For    time.Duration
	Until  time.Time
	Why    string
	Shared error
}

// Notify is told, before a Wait starts waiting, until when it expects to
// and why — to show a waiting event — and again whenever that time moves
// later (another process's 429, a longer retry-after; for a request held
// for want of budget, whose time is Probe after the last request let
// through, each time another goes before it). It must not block.
type Notify func(until time.Time, why string)

// Limiter holds one gate per Key. Its zero value is ready to use, with
// the real clock and no Shared store; set the fields before its first
// use and not after. It is safe for many goroutines. It holds a few
// words per key it has seen and never forgets a key (a process talks to
// a handful of endpoint, key and model triples).
type Limiter struct {
	// Shared, when set, is where the states are kept across processes.
	Shared Shared
	// Clock, when set, replaces the real clock.
	Clock Clock
	// Poll is how often a Wait re-reads Shared while waiting; DefaultPoll
	// when 0.
	Poll time.Duration
	// Probe is how long a waiter held for want of budget waits for an
	// answer before one more goes; DefaultProbe when 0.
	Probe time.Duration

	mu   sync.Mutex
	keys map[Key]*gate
}

// gate is one key's state in the process.
type gate struct {
	State
	// lastGo is when a request was last let through, for Probe.
	lastGo time.Time
	// observed is closed and replaced by every Observe and every change
	// read from Shared, waking the waiters held for want of budget.
	observed chan struct{}
}

func (l *Limiter) gate(key Key) *gate {
	if l.keys == nil {
		l.keys = map[Key]*gate{}
	}
	g := l.keys[key]
	if g == nil {
		g = &gate{State: State{Remaining: -1}, observed: make(chan struct{})}
		l.keys[key] = g
	}
	return g
}

func (g *gate) wake() {
	close(g.observed)
	g.observed = make(chan struct{})
}

// Wait blocks until key may send a request by the policy above, and
// spends one of its budget. notify, when not nil, is called before it
// starts waiting (never when it does not wait). When ctx ends first, Wait
// returns ctx's error (wrapped, naming the key) and what it waited so far,
// and spends nothing.
func (l *Limiter) Wait(ctx context.Context, key Key, notify Notify) (Waited, error) {
	clock := l.clock()
	start := clock.Now()
	var w Waited
	var notified time.Time
	for {
		if l.Shared != nil {
			if err := l.load(ctx, key, clock.Now()); err != nil {
				if ctx.Err() != nil {
					return l.waited(w, start), fmt.Errorf("waiting for the rate limit of %s: %w", key, ctx.Err())
				}
				w.Shared = err
			}
		}
		now := clock.Now()
		l.mu.Lock()
		g := l.gate(key)
		var until time.Time
		var why string
		var wake <-chan struct{}
		switch {
		case now.Before(g.NextAllowed):
			until, why = g.NextAllowed, g.Why
		case g.Remaining != 0:
			if g.Remaining > 0 {
				g.Remaining--
			}
			g.lastGo = now
			l.mu.Unlock()
			return l.waited(w, start), nil
		case !now.Before(g.lastGo.Add(l.probe())):
			// Held, but no answer came since the last request went: one
			// more goes, lest a request lost without an answer hold the
			// key for good.
			g.lastGo = now
			l.mu.Unlock()
			return l.waited(w, start), nil
		default:
			until, wake = g.lastGo.Add(l.probe()), g.observed
			why = "waiting for an answer to a request already sent to " + key.String()
			if g.Why != "" {
				why = g.Why + "; " + why
			}
		}
		l.mu.Unlock()

		w.Until, w.Why = until, why
		if until.After(notified) {
			notified = until
			if notify != nil {
				notify(until, why)
			}
		}
		d := until.Sub(now)
		if l.Shared != nil && d > l.poll() {
			d = l.poll()
		}
		tick, stop := clock.After(d)
		select {
		case <-ctx.Done():
			stop()
			return l.waited(w, start), fmt.Errorf("waiting for the rate limit of %s until %s: %w", key, until.UTC().Format(time.RFC3339), ctx.Err())
		case <-wake:
		case <-tick:
		}
		stop()
	}
}

func (l *Limiter) waited(w Waited, start time.Time) Waited {
	w.For = l.clock().Now().Sub(start)
	return w
}

// Observe records what a response for key said (o, read by FromResponse)
// and, with a Shared store, saves the key's state there. The key's state
// is updated even when saving fails; the error, naming the key, says the
// other processes did not learn of it.
func (l *Limiter) Observe(ctx context.Context, key Key, o Observation) error {
	now := l.clock().Now()
	l.mu.Lock()
	g := l.gate(key)
	g.State = observe(g.State, o, now)
	st := g.State
	g.wake()
	l.mu.Unlock()
	if l.Shared == nil {
		return nil
	}
	if err := l.Shared.Save(ctx, key, st); err != nil {
		return fmt.Errorf("saving the rate limit state of %s: %w", key, err)
	}
	return nil
}

// observe is st after o, observed at now, by the policy above.
func observe(st State, o Observation, now time.Time) State {
	next := o.Next(now)
	if next.After(now) && next.After(st.NextAllowed) {
		st.NextAllowed, st.Why = next, o.Why()
	} else if !st.NextAllowed.After(now) {
		st.Why = o.Why()
	}
	switch {
	case next.After(now):
		st.Remaining = 1
	case o.Requests.HasRemaining:
		st.Remaining = o.Requests.Remaining
	case o.Limited:
		st.Remaining = 1
	default:
		st.Remaining = -1
	}
	if st.NextAllowed.After(now) && (st.Remaining < 0 || st.Remaining > 1) {
		// A wait still runs (an earlier 429's): when it is over one goes
		// first, whatever an answer sent before it said.
		st.Remaining = 1
	}
	st.UpdatedAt = now
	return st
}

// load merges key's state in Shared into the process's: the later
// next-allowed time wins, and a state observed after the one the process
// last knew replaces its budget and reason. A next-allowed time beyond
// MaxWait from now is taken as MaxWait, as a response's would be.
func (l *Limiter) load(ctx context.Context, key Key, now time.Time) error {
	st, found, err := l.Shared.Load(ctx, key)
	if err != nil {
		return fmt.Errorf("reading the rate limit state of %s: %w", key, err)
	}
	if !found {
		return nil
	}
	if limit := now.Add(MaxWait); st.NextAllowed.After(limit) {
		st.NextAllowed = limit
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gate(key)
	changed := false
	if st.UpdatedAt.After(g.UpdatedAt) {
		g.Remaining, g.UpdatedAt = st.Remaining, st.UpdatedAt
		if !g.NextAllowed.After(st.NextAllowed) {
			g.Why = st.Why
		}
		changed = true
	}
	if st.NextAllowed.After(g.NextAllowed) {
		g.NextAllowed, g.Why = st.NextAllowed, st.Why
		changed = true
	}
	if changed {
		g.wake()
	}
	return nil
}

// State is key's state as the process knows it (without reading Shared),
// for tests and an inspector.
func (l *Limiter) State(key Key) State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gate(key).State
}

func (l *Limiter) clock() Clock {
	if l.Clock == nil {
		return realClock{}
	}
	return l.Clock
}

func (l *Limiter) poll() time.Duration {
	if l.Poll <= 0 {
		return DefaultPoll
	}
	return l.Poll
}

func (l *Limiter) probe() time.Duration {
	if l.Probe <= 0 {
		return DefaultProbe
	}
	return l.Probe
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}
