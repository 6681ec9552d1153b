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
	// Answers is how many answers were observed, of any request; Sent
	// less it is the requests in flight. When no request went within a
	// probe it is set to Sent: those unanswered then are taken as lost.
	Answers int64
	// LastSent is when a request was last let through, for Probe; zero
	// when none was.
	LastSent time.Time
}

// Ticket is a request's place among its key's sends, handed out when it
// is let through (Waited.Ticket) and given back with its answer
// (Limiter.ObserveAnswer), so that the answer's budget counts the
// requests the provider had not counted when it answered.
type Ticket struct {
	// N is the key's Sent as the request went: 1 for the first.
	N int64
	// Unanswered is how many requests let through before it had no
	// answer yet as it went: any of them may reach the provider after it,
	// uncounted in what its answer says is left.
	Unanswered int64
	// Local is a ticket the process handed out by its own state, its
	// Shared store not reached (Waited.Shared): N counts the process's
	// sends, not the store's, so its answer is applied to the store
	// without setting the budget or counting as an answer (State.Apply).
	Local bool
}

// Ticket is the ticket of the request st's last Spend let through.
func (st State) Ticket() Ticket {
	return Ticket{N: st.Sent, Unanswered: max(0, st.Sent-1-st.Answers)}
}

// Answer is what one answer said, as State.Apply merges it into its
// key's state. The Limiter makes it from an Observation (Limiter.Observe);
// a Shared store keeps no Answer, only the State it gives.
type Answer struct {
	// Ticket is the ticket of the request answered (Waited.Ticket).
	Ticket Ticket
	// At is when the answer was read; the state's UpdatedAt.
	At time.Time
	// NextAllowed is the earliest time the answer lets the next request
	// go (Observation.Next) when that is after At; zero for no wait.
	NextAllowed time.Time
	// Why is the answer's Observation.Why.
	Why string
	// Remaining is the budget as of the request answered: the requests
	// the answer said were left (Requests.Remaining), -1 when a
	// successful answer said nothing (a wire that reports no limits);
	// unused when KeepsBudget. Apply takes from it the requests its provider may not have
	// counted: those sent after the one answered, and those before it
	// that were unanswered when it went.
	Remaining int64
	// First is an answer after which one request goes first: one that
	// asks for a wait (then one goes when it is over) or a 429 that named
	// no time. The budget it gives is 1, whatever was sent since: the
	// answers to those are refusals too, or say more.
	First bool
	// Reset is when the answer said the key's requests come back
	// (Requests.Reset), zero when it did not say: when the budget Apply
	// computes is 0, it becomes the next-allowed time, and then one
	// request goes first.
	Reset time.Time
	// ResetWhy is Why for a wait until Reset.
	ResetWhy string
	// KeepsBudget is an answer that said nothing of the requests left
	// and is no sign of them either: a refusal or a fault (a 502, a 529
	// from a gateway) without limit headers. It leaves the budget as it
	// was, so the requests held for want of it stay held — but for one to
	// go first when it leaves none and no request is in flight, no answer
	// then coming to set it (the retry of the failed request, after its
	// backoff). Its wait, if any, still counts.
	KeepsBudget bool
	// Unreached is an answer whose request never reached the provider
	// (Observation.Unreached): it keeps the budget, and counts as an
	// answer only when its request cannot have been written off as lost
	// already — a quiet spend (State.Spend) counts every request before
	// it as answered, and counting one again would count another,
	// perhaps still in flight, as answered: when its request is the
	// newest the state counts as sent, or numbered above the answers
	// counted (a write-off leaves every request it wrote off at or below
	// them).
	Unreached bool
	// Again is what the answer to a request said after the answer was
	// applied already: an error event inside a stream whose status and
	// headers were observed as it began (Limiter.ObserveInStream). It is
	// applied as any answer is — to the latest request the state counts
	// as sent when its ticket is older (State.Apply) — but not counted in
	// Answers a second time: the request is answered once.
	Again bool
}

// Spend lets one request go at now, if st allows it: NextAllowed has
// passed and the budget is not spent, or it is but no request went
// within probe (one more goes, lest a request lost without an answer
// hold the key for good). It returns the state after and whether the
// request may go; its ticket is then the state's Sent, with the requests
// let through before it still unanswered (Sent-1-Answers; none when no
// request went within probe: those are taken as lost). A refused Spend
// changes nothing.
func (st State) Spend(now time.Time, probe time.Duration) (State, bool) {
	if now.Before(st.NextAllowed) {
		return st, false
	}
	quiet := !now.Before(st.LastSent.Add(probe))
	if st.Remaining == 0 && !quiet {
		return st, false
	}
	if quiet {
		st.Answers = st.Sent
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
//     the budget sets it: a's Remaining less the requests its provider
//     may not have counted — those sent after a's (st.Sent - a.Ticket.N)
//     and those before it unanswered when it went (a.Ticket.Unanswered)
//     — never below 0; -1 stays no bound. When that is 0 and a named a
//     Reset, the next-allowed time becomes the reset (when later) and the
//     budget 1: one goes first, as after any wait. An answer asking for
//     a wait, or a 429 naming no time, sets it to 1 (First);
//   - an answer that keeps the budget (KeepsBudget), or whose ticket is
//     a local one (Ticket.Local: its N is not the key's count of sends),
//     does not set it; but one that keeps a budget of 0 with no request
//     in flight after it sets 1: no answer is coming to set it;
//   - an answer said again (Again) is the answer to the latest request
//     st counts as sent (st.Ticket(): those unanswered before it still
//     taken off), when its ticket is older;
//   - every answer counts in Answers, but one of a local ticket (whose
//     send is not counted in Sent either), one said again (Again: its
//     request was counted as answered when its stream began) and an
//     unreached one whose request may have been written off (Unreached);
//   - while a wait runs, at most one goes first when it is over.
func (st State) Apply(a Answer) State {
	if a.NextAllowed.After(st.NextAllowed) {
		st.NextAllowed, st.Why = a.NextAllowed, a.Why
	} else if !st.NextAllowed.After(a.At) {
		st.Why = a.Why
	}
	if a.Again && !a.Ticket.Local && st.Sent > a.Ticket.N {
		// said again inside a stream, the answer is the provider's word
		// as of now: the answer to the latest request st holds, not to
		// the latest its caller knew of (other processes' newer answers
		// would overtake it and drop it)
		a.Ticket = st.Ticket()
	}
	if a.Ticket.N >= st.Answered && !a.KeepsBudget && !a.Ticket.Local {
		b := a.Remaining
		if a.First {
			b = 1
		} else if b >= 0 {
			b = max(0, b-max(0, st.Sent-a.Ticket.N)-a.Ticket.Unanswered)
		}
		if b == 0 && !a.Reset.IsZero() {
			if a.Reset.After(st.NextAllowed) && a.Reset.After(a.At) {
				st.NextAllowed, st.Why = a.Reset, a.ResetWhy
			}
			b = 1
		}
		st.Remaining, st.Answered = b, a.Ticket.N
	}
	if !a.Ticket.Local && !a.Again && (!a.Unreached || a.Ticket.N == st.Sent || a.Ticket.N > st.Answers) {
		st.Answers++
		if a.KeepsBudget && st.Remaining == 0 && st.Sent <= st.Answers {
			st.Remaining = 1
		}
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
func answerOf(o Observation, now time.Time, ticket Ticket) Answer {
	a := Answer{Ticket: ticket, At: now, Why: o.Why(), Unreached: o.Unreached}
	next := o.Next(now)
	switch {
	case next.After(now):
		a.NextAllowed, a.Remaining, a.First = next, 1, true
	case o.Requests.HasRemaining:
		a.Remaining = o.Requests.Remaining
		if !o.Requests.Reset.IsZero() {
			a.Reset, a.ResetWhy = o.Requests.Reset, sentWhy(o.Requests)
		}
	case o.Limited:
		a.Remaining, a.First = 1, true
	case o.failed():
		// A 502 or a 529 from a gateway that sent no limit headers, or a
		// request that never reached the provider, says nothing of the
		// requests left: the budget stays as it was.
		a.KeepsBudget = true
	default:
		a.Remaining = -1
	}
	return a
}

// failed is whether o is a refusal or a fault rather than an answer: a
// status of 400 or more, an error read from inside a stream, or a request
// that never reached the provider.
func (o Observation) failed() bool {
	return o.Overloaded || o.ServerFault || o.QuotaSpent || o.Status >= 400 || o.Error != "" || o.Unreached
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
