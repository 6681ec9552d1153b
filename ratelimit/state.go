package ratelimit

import (
	"fmt"
	"time"
)

// This file is the state of one key and the two things that change it:
// a request let through (State.Spend) and an answer (State.Apply). The
// Limiter applies them to the state it keeps in the process; a Shared
// store applies the same two, each as one atomic operation, to the state
// every process shares (Memory as these functions, Postgres as one SQL
// statement each, which ratelimittest.RunShared holds to these).

// State is what a limiter knows of one key, as it keeps it and as a
// Shared store holds it. The zero State is a key nothing is known of: one
// request may go (nothing was sent within a Probe), and its answer sets
// the budget.
type State struct {
	// NextAllowed is the earliest time the key may send; zero for now.
	// It never moves earlier.
	NextAllowed time.Time
	// Remaining is how many requests may go once NextAllowed has passed
	// before an answer says more; -1 for no bound. It is the budget the
	// last applied answer gave (the requests it said were left, less
	// those sent after its request), less those sent since, not a count
	// the provider keeps.
	Remaining int64
	// Why says what NextAllowed or Remaining came from, in words for a
	// waiting line (Observation.Why); "" when nothing asked for a wait.
	Why string
	// UpdatedAt is when the state was last observed (an answer applied),
	// by the clock of the process that observed it.
	UpdatedAt time.Time
	// Sent is how many requests were let through on the key, ever: it
	// only grows, and each request's ticket is Sent as it went (1 for the
	// first).
	Sent int64
	// Answered is the ticket of the answer that last set Remaining: an
	// answer to an older request does not overwrite it (0: none yet).
	Answered int64
	// LastSent is when a request was last let through, for Probe; zero
	// when none was.
	LastSent time.Time
}

// Answer is what one answer said, as State.Apply merges it into its
// key's state. The Limiter makes it from an Observation (Limiter.Observe);
// a Shared store keeps no Answer, only the State it gives.
type Answer struct {
	// Ticket is the ticket of the request answered (Waited.Ticket): the
	// key's Sent when it went.
	Ticket int64
	// At is when the answer was read; the state's UpdatedAt.
	At time.Time
	// NextAllowed is the earliest time the answer lets the next request
	// go (Observation.Next) when that is after At; zero for no wait.
	NextAllowed time.Time
	// Why is the answer's Observation.Why.
	Why string
	// Remaining is the budget as of the request answered: the requests
	// the answer said were left (Requests.Remaining), 1 after a wait or a
	// 429 that said neither (one goes first), -1 when it said nothing.
	// Apply takes from it the requests sent after the one answered.
	Remaining int64
	// Reset is when the answer said the key's requests come back
	// (Requests.Reset), zero when it did not say: when the budget Apply
	// computes is 0, it becomes the next-allowed time, and then one
	// request goes first.
	Reset time.Time
	// ResetWhy is Why for a wait until Reset.
	ResetWhy string
}

// Spend lets one request go at now, if st allows it: NextAllowed has
// passed and the budget is not spent, or it is but no request went
// within probe (one more goes, lest a request lost without an answer
// hold the key for good). It returns the state after and whether the
// request may go; its ticket is then the state's Sent. A refused Spend
// changes nothing.
func (st State) Spend(now time.Time, probe time.Duration) (State, bool) {
	if now.Before(st.NextAllowed) {
		return st, false
	}
	if st.Remaining == 0 && now.Before(st.LastSent.Add(probe)) {
		return st, false
	}
	if st.Remaining > 0 {
		st.Remaining--
	}
	st.Sent++
	st.LastSent = now
	return st, true
}

// Apply is st after a, by the rules of docs/ratelimits.md ("Limiter"):
//
//   - a's next-allowed time is kept when it is later than st's (with its
//     Why): the next-allowed time never moves earlier;
//   - an answer to a request no older than the one whose answer last set
//     the budget sets it: a's Remaining less the requests sent after a's
//     (st.Sent - a.Ticket), never below 0; -1 stays no bound. When that
//     is 0 and a named a Reset, the next-allowed time becomes the reset
//     (when later) and the budget 1: one goes first, as after any wait;
//   - while a wait runs, at most one goes first when it is over.
func (st State) Apply(a Answer) State {
	if a.NextAllowed.After(st.NextAllowed) {
		st.NextAllowed, st.Why = a.NextAllowed, a.Why
	} else if !st.NextAllowed.After(a.At) {
		st.Why = a.Why
	}
	if a.Ticket >= st.Answered {
		b := a.Remaining
		if b >= 0 {
			b = max(0, b-max(0, st.Sent-a.Ticket))
		}
		if b == 0 && !a.Reset.IsZero() {
			if a.Reset.After(st.NextAllowed) && a.Reset.After(a.At) {
				st.NextAllowed, st.Why = a.Reset, a.ResetWhy
			}
			b = 1
		}
		st.Remaining, st.Answered = b, a.Ticket
	}
	if st.NextAllowed.After(a.At) && (st.Remaining < 0 || st.Remaining > 1) {
		// A wait still runs (an earlier 429's): when it is over one goes
		// first, whatever an answer sent before it said.
		st.Remaining = 1
	}
	if a.At.After(st.UpdatedAt) {
		st.UpdatedAt = a.At
	}
	return st
}

// answerOf is the Answer o gives, read at now, to the request of ticket.
func answerOf(o Observation, now time.Time, ticket int64) Answer {
	a := Answer{Ticket: ticket, At: now, Why: o.Why()}
	next := o.Next(now)
	switch {
	case next.After(now):
		a.NextAllowed, a.Remaining = next, 1
	case o.Requests.HasRemaining:
		a.Remaining = o.Requests.Remaining
		if !o.Requests.Reset.IsZero() {
			a.Reset, a.ResetWhy = o.Requests.Reset, sentWhy(o.Requests)
		}
	case o.Limited:
		a.Remaining = 1
	default:
		a.Remaining = -1
	}
	return a
}

// sentWhy says that the requests d said were left are all sent, until
// d's reset: "requests: the 3 left of 50 are sent, until 12:00:05 UTC"
// ("requests: 0 of 50 left until 12:00:05 UTC" when none were, as
// Observation.Why says it).
func sentWhy(d Dimension) string {
	of := ""
	if d.HasLimit {
		of = fmt.Sprintf(" of %d", d.Limit)
	}
	until := " until " + d.Reset.UTC().Format("15:04:05") + " UTC"
	if d.Remaining == 0 {
		return "requests: 0" + of + " left" + until
	}
	return fmt.Sprintf("requests: the %d left%s are sent,%s", d.Remaining, of, until)
}
