package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// This file is the limiter: one gate per Key that every request of the
// process waits at, fed by what the answers said (Observe), and, with a
// Shared store, by what every other process sharing the store observed.
// The policy, in short (docs/ratelimits.md, "Limiter"; the arithmetic is
// State.Spend and State.Apply, state.go):
//
//   - A key may send when its next-allowed time has passed. That time
//     only ever moves later: an answer saying "go now" does not undo a
//     429's retry-after still running.
//   - It may send at most its budget: the requests an answer said were
//     left, less those sent after the request it answered (each request
//     let through has a ticket, its place in the key's count of sends,
//     and its answer is observed with it); 1 after a wait (one request
//     goes first and its answer says how many more may follow); no bound
//     when the answers say nothing. A key nothing is known of lets one
//     request go first. A waiter finding none left is held until the
//     key's next answer or, if none comes, Probe after the last request
//     let through, when one more goes.
//   - With a Shared store the store decides: letting a request go is one
//     atomic Spend there, and an answer one atomic Save, so the processes
//     sharing it spend one budget, never each their own copy. A store
//     that cannot be reached, or does not answer within StoreTimeout,
//     leaves the process to its own state; the tickets it then hands out
//     are local ones (Ticket.Local), whose answers do not set the store's
//     budget.

// DefaultPoll is how often a Wait asks a Shared store again while it
// waits, so that a later next-allowed time saved by another process is
// honoured, and a budget another process's answer gave is spent, within
// it.
const DefaultPoll = time.Second

// DefaultProbe is how long a waiter held for want of budget waits for an
// answer before one more request goes: an answer's headers come back in
// well under this, so it only passes when a request failed without one.
const DefaultProbe = 2 * time.Second

// DefaultStoreTimeout is how long one call of a Shared store may take
// before the process gives up on it and goes by its own state, as when
// the store cannot be reached: a statement on a row takes milliseconds,
// so it only passes when the store hangs (a pool with no connection to
// give).
const DefaultStoreTimeout = 2 * time.Second

// Shared is where limiters of several processes keep their keys' states,
// so that they spend one budget between them, wait for each other's 429s,
// and a retry-after outlives a restart. Each method is one atomic step
// on a key's state, whatever other processes do at once:
//
//   - Load returns the key's state, found false (and no error) for a key
//     it holds nothing of.
//   - Times. Spend's now and an Answer's times are the caller's clock. A
//     store shared by processes of one host may decide by them (Memory);
//     a store shared between hosts decides by a clock of its own, since
//     hosts' clocks differ (Postgres: the database's): Spend compares
//     the key's times with its own now, and Save stores an answer's
//     times as the same distances from its own now as they were from the
//     answer's At. The times of the states it returns are then on its
//     clock, which a caller only waits by (a little longer or shorter by
//     the skew): whether a request goes is the store's Spend.
//   - Spend lets one request go at now if the key's state allows it
//     (State.Spend, from the zero State for a key it holds nothing of),
//     keeping the state after; it returns that state, whether the request
//     may go (its ticket is then the state's Sent), and, when it may not,
//     the state as it found it, to wait by. Two Spends never both take
//     the last of a budget.
//   - Save applies an answer to the key's state (State.Apply, from the
//     zero State for a key it holds nothing of) against the sends it
//     holds at that moment, and returns the state after.
//
// ratelimittest.RunShared checks all this. An implementation must hold
// no key, only Key's identity.
type Shared interface {
	Load(ctx context.Context, key Key) (state State, found bool, err error)
	Spend(ctx context.Context, key Key, now time.Time, probe time.Duration) (state State, granted bool, err error)
	Save(ctx context.Context, key Key, a Answer) (State, error)
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
// when it last expected to, and why (empty when it did not wait). Ticket
// is the request's ticket (its place among the key's sends): its answer
// is observed with it (ObserveAnswer). Shared is the error of a
// Shared store that could not be reached meanwhile (or did not answer
// within the Limiter's StoreTimeout): the Wait went on by the process's
// own state, and the caller should say so.
type Waited struct {
	For    time.Duration
	Until  time.Time
	Why    string
	Ticket Ticket
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
	// Poll is how often a Wait asks Shared again while waiting;
	// DefaultPoll when 0.
	Poll time.Duration
	// Probe is how long a waiter held for want of budget waits for an
	// answer before one more goes; DefaultProbe when 0.
	Probe time.Duration
	// StoreTimeout bounds each call of Shared (within the caller's
	// context): past it the process goes by its own state, as when the
	// store cannot be reached; DefaultStoreTimeout when 0.
	StoreTimeout time.Duration

	mu   sync.Mutex
	keys map[Key]*gate
}

// gate is one key's state in the process: with a Shared store, the
// store's as last read, with what the process observed and could not
// save.
type gate struct {
	State
	// observed is closed and replaced by every answer observed and every
	// newer answer read from Shared, waking the waiters held for want of
	// budget.
	observed chan struct{}
	// local is set when the process let a request go by its own state,
	// the store not reached: its counts are then the process's, not the
	// store's, until the store's are read again (adopt).
	local bool
	// stored is the next-allowed time the store gave last, and cut it
	// as adopt took it (at most MaxWait from when it was read): the cut
	// time only moves when the stored one does.
	stored, cut time.Time
}

func (l *Limiter) gate(key Key) *gate {
	if l.keys == nil {
		l.keys = map[Key]*gate{}
	}
	g := l.keys[key]
	if g == nil {
		g = &gate{observed: make(chan struct{})}
		l.keys[key] = g
	}
	return g
}

func (g *gate) wake() {
	close(g.observed)
	g.observed = make(chan struct{})
}

// Wait blocks until key may send a request by the policy above, and
// spends one of its budget; the Waited it returns carries the request's
// ticket. notify, when not nil, is called before it starts waiting (never
// when it does not wait). When ctx ends first, Wait returns ctx's error
// (wrapped, naming the key) and what it waited so far, and spends
// nothing.
//
// With a Shared store, the store decides (one Spend per request let
// through, and one per Poll while waiting; a Load instead while the
// process knows of a next-allowed time not yet passed); when it cannot be
// reached, the process decides by its own state and Waited.Shared says
// so.
func (l *Limiter) Wait(ctx context.Context, key Key, notify Notify) (Waited, error) {
	clock := l.clock()
	start := clock.Now()
	var w Waited
	var notified time.Time
	again := 0 // refusals in a row by a state that would allow
	for {
		// local: the process decides by its own state (no Shared store,
		// or one that could not be reached this time)
		local := l.Shared == nil
		if !local {
			now := clock.Now()
			var err error
			if now.Before(l.State(key).NextAllowed) {
				// A wait the process knows of runs: the store is read
				// only to learn of a later one.
				err = l.load(ctx, key, now)
			} else {
				var st State
				var granted bool
				sctx, cancel := l.storeContext(ctx)
				st, granted, err = l.Shared.Spend(sctx, key, now, l.probe())
				cancel()
				if err == nil {
					l.mu.Lock()
					l.gate(key).adopt(st, now)
					l.mu.Unlock()
					if granted {
						w.Ticket = st.Ticket()
						return l.waited(w, start), nil
					}
				} else {
					err = fmt.Errorf("spending the rate limit of %s: %w", key, err)
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return l.waited(w, start), fmt.Errorf("waiting for the rate limit of %s: %w", key, ctx.Err())
				}
				w.Shared, local = err, true
			}
		}
		now := clock.Now()
		l.mu.Lock()
		g := l.gate(key)
		if local {
			if st, ok := g.Spend(now, l.probe()); ok {
				g.State = st
				w.Ticket = st.Ticket()
				// A ticket of the process's own count, not the store's
				// (none when there is no store to tell it from).
				w.Ticket.Local = l.Shared != nil
				g.local = w.Ticket.Local
				l.mu.Unlock()
				return l.waited(w, start), nil
			}
		}
		var until time.Time
		var why string
		var wake <-chan struct{}
		if now.Before(g.NextAllowed) {
			until, why = g.NextAllowed, g.Why
		} else {
			// Held for want of budget: until an answer comes, or Probe
			// after the last request went. (A store that refused though
			// the state it gave would allow, read before another
			// process's spend landed, is asked again at once.)
			until, wake = later(now, g.LastSent.Add(l.probe())), g.observed
			why = "waiting for an answer to a request already sent to " + key.String()
			if g.Why != "" {
				why = g.Why + "; " + why
			}
		}
		l.mu.Unlock()

		d := until.Sub(now)
		if d > 0 {
			again = 0
			w.Until, w.Why = until, why
			if until.After(notified) {
				notified = until
				if notify != nil {
					notify(until, why)
				}
			}
		} else if again++; again > 2 {
			// A store that keeps refusing by a state that allows: ask it
			// again only every Poll.
			d = l.poll()
		}
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

// ObserveAnswer records what the answer to the request of ticket
// (Waited.Ticket) said of key's limits (o, read by FromResponse) and,
// with a Shared store, saves it there, where it is applied against the
// sends the store holds. The key's state in the process is updated even
// when saving fails; the error, naming the key, says the other processes
// did not learn of it.
func (l *Limiter) ObserveAnswer(ctx context.Context, key Key, ticket Ticket, o Observation) error {
	return l.observe(ctx, key, ticket, o, false)
}

// ObserveUnreached records that the request of ticket never reached the
// provider (no connection was made): an answer that keeps the budget and
// holds no other request for its own (Observation.Unreached). It counts
// as an answer only when its request cannot have been written off as lost
// already (Answer.Unreached): a dial that hung until another request's
// spend took it as lost is not counted twice.
func (l *Limiter) ObserveUnreached(ctx context.Context, key Key, ticket Ticket) error {
	return l.ObserveAnswer(ctx, key, ticket, Observation{At: l.clock().Now(), From: key.Endpoint, Unreached: true})
}

// observe is ObserveAnswer, of an answer said again (Answer.Again) when
// again is set.
func (l *Limiter) observe(ctx context.Context, key Key, ticket Ticket, o Observation, again bool) error {
	now := l.clock().Now()
	a := answerOf(o, now, ticket)
	a.Again = again
	// In the process a local ticket counts as any: the process's counts
	// are what it handed out.
	mine := a
	mine.Ticket.Local = false
	l.mu.Lock()
	g := l.gate(key)
	g.State = g.Apply(mine)
	if l.Shared == nil {
		g.wake()
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	sctx, cancel := l.storeContext(ctx)
	st, err := l.Shared.Save(sctx, key, a)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	g = l.gate(key)
	if err != nil {
		g.wake()
		return fmt.Errorf("saving the rate limit state of %s: %w", key, err)
	}
	// The waiters are woken once the store holds the answer: they ask it
	// for the budget the answer gave.
	g.adopt(st, now)
	g.wake()
	return nil
}

// Observe is ObserveAnswer for an answer whose request's ticket the
// caller does not know: it is taken as the answer to the latest request
// the process let through on key. A caller that waited for the request
// (Wait) passes its ticket to ObserveAnswer instead: an answer taken as
// newer than it is lets more requests go than its key has left.
func (l *Limiter) Observe(ctx context.Context, key Key, o Observation) error {
	l.mu.Lock()
	g := l.gate(key)
	ticket := g.Ticket()
	ticket.Local = g.local
	l.mu.Unlock()
	return l.ObserveAnswer(ctx, key, ticket, o)
}

// ObserveInStream records o, an error event read from inside the stream
// of an answer to key whose status and headers were observed already (a
// stream that began 200 and then said rate_limit_error, overloaded_error,
// ThrottlingException, RESOURCE_EXHAUSTED...; o read by FromResponse
// with status 0): as ObserveAnswer would the same refusal answered with
// its status — a wait it asked for holds the key, a rate limit lets one
// request go first, an overload or a fault leaves the budget — taken as
// the answer to the latest request the key's state counts as sent (with
// Shared, the store's: maybe another process's; State.Apply), and
// not counted as a second answer (Answer.Again). An o that names no
// refusal, fault nor wait (an invalid request, an error the reader could
// not name) says nothing of the key's limits and is not recorded. Its
// error is ObserveAnswer's.
func (l *Limiter) ObserveInStream(ctx context.Context, key Key, o Observation) error {
	if !o.Limited && !o.Overloaded && !o.ServerFault && !o.QuotaSpent && o.RetryAfter <= 0 {
		return nil
	}
	l.mu.Lock()
	g := l.gate(key)
	ticket := g.Ticket()
	ticket.Local = g.local
	l.mu.Unlock()
	return l.observe(ctx, key, ticket, o, true)
}

// adopt merges st, read from Shared at now, into g: the later
// next-allowed time wins, and a state that counts as many sends and
// answers as g's or more (or any, when g's counts are the process's
// own: g.local) replaces its budget, counts and reason. A next-allowed
// time beyond MaxWait from now is taken as MaxWait, as a response's
// would be — once, when the store gives it: the same stored time read
// again does not move the cut one later. It says whether st held an
// answer g had not seen (or a later time), when waiters should look
// again.
func (g *gate) adopt(st State, now time.Time) bool {
	if !st.NextAllowed.Equal(g.stored) {
		g.stored, g.cut = st.NextAllowed, st.NextAllowed
		if limit := now.Add(MaxWait); st.NextAllowed.After(limit) {
			g.cut = limit
		}
	}
	st.NextAllowed = g.cut
	news := false
	if g.local || st.Sent > g.Sent || st.Sent == g.Sent && st.Answers >= g.Answers {
		news = g.local || st.Answers != g.Answers || st.UpdatedAt.After(g.UpdatedAt)
		g.Remaining, g.Sent, g.Answered, g.Answers, g.LastSent, g.UpdatedAt = st.Remaining, st.Sent, st.Answered, st.Answers, st.LastSent, st.UpdatedAt
		g.local = false
		if !g.NextAllowed.After(st.NextAllowed) {
			g.Why = st.Why
		}
	}
	if st.NextAllowed.After(g.NextAllowed) {
		g.NextAllowed, g.Why = st.NextAllowed, st.Why
		news = true
	}
	return news
}

// load reads key's state in Shared into the process's (adopt), waking
// its waiters when it held news.
func (l *Limiter) load(ctx context.Context, key Key, now time.Time) error {
	sctx, cancel := l.storeContext(ctx)
	st, found, err := l.Shared.Load(sctx, key)
	cancel()
	if err != nil {
		return fmt.Errorf("reading the rate limit state of %s: %w", key, err)
	}
	if !found {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if g := l.gate(key); g.adopt(st, now) {
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

// Now is the limiter's time, which its waits and observations count by:
// its Clock's, else the real one. Whoever reads answers for it (a wire's
// gate) stamps them with this time, never its own.
func (l *Limiter) Now() time.Time { return l.clock().Now() }

func (l *Limiter) poll() time.Duration {
	if l.Poll <= 0 {
		return DefaultPoll
	}
	return l.Poll
}

// storeContext is ctx bounded for one call of Shared (StoreTimeout).
func (l *Limiter) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := l.StoreTimeout
	if d <= 0 {
		d = DefaultStoreTimeout
	}
	return context.WithTimeout(ctx, d)
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
