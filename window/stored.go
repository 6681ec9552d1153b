package window

import "github.com/myelin-run/myelin/history"

// Stored is a stored conversation (records included) read for the work of
// one request on it: the edits of its records are gathered once, and
// Measure, Policy.PlanFor and View use them, instead of each gathering
// them again (a long session's edits name hundreds of cleared results).
// It reads the conversation through a Tail: the whole of it (Gather), or
// its messages from a place on with the facts of those before (GatherTail).
//
// It holds the messages it was made from, not a copy: neither it nor they
// may be changed while it is used. It is not safe for concurrent use.
type Stored struct {
	t   Tail
	all edits // the edits of every record
	// last is the last answer whose usage counts its request (lastCounted),
	// and before are the edits of the records before it, gathered apart only
	// when a record stands after it (else they are all's).
	last     int
	before   edits
	split    bool // a record stands at or after last
	gathered bool // before and split are set
}

// Gather reads stored, a conversation as stored (records included), for
// one request's Measure, Plan and View.
func Gather(stored []history.Message) *Stored {
	return GatherTail(Whole(stored))
}

// GatherTail reads t, a conversation as loaded from its From on, for one
// request's Measure, Plan and View. Their answers are those over the whole
// conversation when t's From is at most Least of it.
func GatherTail(t Tail) *Stored {
	s := read(t)
	return &s
}

// read is GatherTail's Stored as a value, for the functions that use it
// once (Measure, Plan, View): kept on the stack, it costs no allocation.
func read(t Tail) Stored {
	return Stored{t: t, all: t.gathered(), last: t.lastCounted()}
}

// Tail is the conversation s was made from.
func (s *Stored) Tail() *Tail { return &s.t }

// End is the number of messages stored: the place the next one takes.
func (s *Stored) End() int { return s.t.End() }

// View is View(s's messages), with the edits already gathered.
func (s *Stored) View() []history.Message {
	return viewWith(&s.t, s.all, s.t.End())
}

// ResultCleared reports whether a record among s's messages takes the
// result of call callID in stored message msg out of requests (its
// placeholder is sent instead), as View applies it.
func (s *Stored) ResultCleared(msg int, callID string) bool {
	_, ok := s.all.results[place{msg, callID}]
	return ok
}

// editsBefore are the edits of the records before place k, for k = s.last,
// and whether a record stands at or after k; when none does, they are the
// edits of all the records, not gathered again.
func (s *Stored) editsBefore(k int) (edits, bool) {
	if !s.gathered {
		s.before, s.split = s.all, false
		if s.all.records {
			for _, m := range s.t.span(k, s.t.End()) {
				if m.Role == history.Context {
					s.before, s.split = s.t.gatheredTo(k), true
					break
				}
			}
		}
		s.gathered = true
	}
	return s.before, s.split
}

// Least is Least of s's conversation as its tail tells it: the greatest
// From from which a Tail gives every reader of this package the answer it
// gives over the whole list — the start of the view in force now, or
// that of the request the last counted answer counted when it started
// before. For a tail whose From is at most Least of the whole list it is
// that Least (neither the record of the summary in force nor the last
// counted answer stands before such a From), so a caller may keep it
// (history.Mark) and read only from it later: it never falls as messages
// are added after the tail, since the summary in force is the one with
// the greatest Through (a later record with a smaller one does not
// replace it), and a later counted answer's request starts no earlier.
func (s *Stored) Least() int {
	from := s.all.first()
	if from > 0 && s.last >= 0 { // (nothing goes below 0: no need to gather)
		if before, _ := s.editsBefore(s.last); before.first() < from {
			from = before.first()
		}
	}
	return from
}

// LastCounted is the place of the last answer of s whose usage counts its
// request (the one Measure calibrates by), or -1 when s holds none.
func (s *Stored) LastCounted() int { return s.last }
