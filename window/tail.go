package window

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/myelin-run/myelin/history"
)

// Tail is a stored conversation (records included) as loaded from place
// From on — the stored messages from From to its end, at their absolute
// places — with what the window needs of the messages before From
// (Before). Every function of this package that sizes, plans or builds a
// request reads a conversation through one, so that a conversation whose
// older messages were not read (issue 34: a resume that reads only the
// window) gives the same View, Measure, Plan and Ratio as the whole list.
//
// Places stay absolute: Cleared.Msg, Summary.Through, Count.Since and
// Candidate.Msg name stored messages counted from the conversation's
// first. A Tail holds no entry for a message before From: At panics for
// one, so that a reader that would reach past the tail fails loudly
// instead of reading an empty message. It holds the messages it was made
// from, not a copy: they must not be changed while it is used.
type Tail struct {
	from  int
	msgs  []history.Message // the stored messages from from on
	prior edits             // the edits of the records before from
}

// Before is what the window needs of a stored conversation's messages
// before a place From: the edits of the records among them that can still
// apply to a request built from From on. It is what a store would keep
// beside a conversation so that a resume need not read those messages.
//
// For a From at most Least, as the agent writes records, it is almost
// nothing: a record clears only messages before it (so before From), and
// a summary stored before From ends before From, so the summary in force,
// whose Through is From or after, is a record of the tail (and a From
// above 0 needs one: Least is 0 without a summary). So Summary, Records
// and Edited add nothing a tail does not hold, and Cleared is empty; they
// are kept so that a Tail from a From at most Least still reads right,
// should a record ever clear a later place or end a summary after itself
// (a From past Least reads wrong whatever Before holds: TailOf refuses
// it).
type Before struct {
	// Records is whether a Context record stands before From.
	Records bool
	// Edited is whether one of them edits requests (clears or summarises).
	Edited bool
	// Cleared are the clearings of the records before From that name a
	// place at From or after, in the order they were stored (a later one
	// of the same place replaces an earlier one). Those naming a place
	// before From cannot apply: no request sends a message before From.
	Cleared []history.Cleared
	// Summary is the summary in force at From: of the records before it,
	// the one with the greatest Through (the latest of equals); nil when
	// none summarised.
	Summary *history.Summary
}

// Whole is the Tail of the whole of stored: From 0, nothing before it.
// What a reader gives over it is what it gives over stored.
func Whole(stored []history.Message) Tail {
	return Tail{msgs: stored}
}

// BeforeOf is Before of stored's messages before place from, computed from
// the whole list (a store would keep it instead).
func BeforeOf(stored []history.Message, from int) Before {
	e := gather(stored[:from])
	b := Before{Records: e.records, Edited: e.any, Summary: e.summary}
	for i := range stored[:from] {
		if m := &stored[i]; m.Role == history.Context && m.Edit != nil {
			for _, c := range m.Edit.Cleared {
				if c.Msg >= from {
					b.Cleared = append(b.Cleared, c)
				}
			}
		}
	}
	return b
}

// NewTail is the Tail of a conversation whose stored messages from place
// from on are msgs, and whose messages before from are said by b
// (BeforeOf). It does not check that from is one the readers allow (see
// Least, TailOf): a Tail made past it reads wrong, or panics.
func NewTail(from int, msgs []history.Message, b Before) Tail {
	t := Tail{from: from, msgs: msgs}
	t.prior = edits{records: b.Records, any: b.Edited, summary: b.Summary}
	t.prior.addCleared(b.Cleared)
	return t
}

// TailOf is the Tail of stored from place from on, with BeforeOf's facts.
// It fails, saying which reader needs what, for a from past the least one
// the window's readers allow (Least) or past stored's end.
func TailOf(stored []history.Message, from int) (Tail, error) {
	if from < 0 || from > len(stored) {
		return Tail{}, fmt.Errorf("a tail from place %d of a conversation of %d stored messages: it must be between 0 and %d", from, len(stored), len(stored))
	}
	if least, why := Least(stored); from > least {
		return Tail{}, fmt.Errorf("a tail from place %d: %s, so it must start at %d or before", from, why, least)
	}
	return NewTail(from, stored[from:], BeforeOf(stored, from)), nil
}

// Least is the greatest From from which a Tail of stored gives every
// reader of this package (View, Measure, PlanFor, Ratio, CutFor,
// SummaryRequestFor) the answer it gives over the whole list, and why it
// is not greater:
//
//   - View sends the stored messages from the summary in force on
//     (Summary.Through of the latest; 0 with none, and then From is 0);
//   - Measure and Ratio size again the request the last counted answer's
//     usage counted: the messages from the summary in force when that
//     answer came (of the records before it) up to it.
//
// The rounds PlanFor may clear, and the places CutFor may end a summary
// at, are all after the summary in force, so they ask no more.
func Least(stored []history.Message) (from int, why string) {
	all := gather(stored)
	from, why = all.first(), "the request sends the stored messages from the summary in force on"
	if all.summary == nil {
		why = "the request sends every stored message (no summary stands for the first)"
	}
	if k := lastCounted(stored); k >= 0 {
		if f := gather(stored[:k]).first(); f < from {
			from, why = f, fmt.Sprintf("the size of the request that the last counted answer (place %d) counted is read again from the messages it sent, from place %d on", k, f)
		}
	}
	return from, why
}

// From is the place of the first message t holds.
func (t *Tail) From() int { return t.from }

// End is the number of messages stored: the place after t's last.
func (t *Tail) End() int { return t.from + len(t.msgs) }

// Messages are the stored messages from From on: Messages()[i] is the
// message at place From+i.
func (t *Tail) Messages() []history.Message { return t.msgs }

// At is the stored message at place i, which must be From or after: it
// panics for a place before From (not loaded) or past the end.
func (t *Tail) At(i int) *history.Message {
	if i < t.from {
		panic(fmt.Sprintf("window: the stored message at place %d was read, but the tail starts at place %d", i, t.from))
	}
	return &t.msgs[i-t.from]
}

// span is the stored messages from place i to place j; it panics when i is
// before From.
func (t *Tail) span(i, j int) []history.Message {
	if i < t.from {
		panic(fmt.Sprintf("window: the stored messages from place %d were read, but the tail starts at place %d", i, t.from))
	}
	return t.msgs[i-t.from : j-t.from]
}

// gathered are the edits of every record of t: those before From, then
// those it holds.
func (t *Tail) gathered() edits {
	return t.gatheredTo(t.End())
}

// gatheredTo are the edits of t's records before place end (From or
// after).
func (t *Tail) gatheredTo(end int) edits {
	e := t.prior.clone()
	e.add(t.span(t.from, end))
	return e
}

// lastCounted is the place of the last assistant message of t whose usage
// counts its request, or -1.
func (t *Tail) lastCounted() int {
	if k := lastCounted(t.msgs); k >= 0 {
		return t.from + k
	}
	return -1
}

// BeforeAt is Before of t's conversation at place from, which is t's From
// or after and at most its End: what precedes t's From (t's own Before)
// and t's records before from, as BeforeOf would give it from the whole
// list. It is what a caller keeps beside a later From (history.Mark), so
// that a Tail from there reads right. Its Cleared are in the order of
// their places.
func (t *Tail) BeforeAt(from int) Before {
	if from < t.from || from > t.End() {
		panic(fmt.Sprintf("window: the facts before place %d were asked of a tail from place %d to %d", from, t.from, t.End()))
	}
	e := t.gatheredTo(from)
	b := Before{Records: e.records, Edited: e.any, Summary: e.summary}
	for _, cs := range []map[place]history.Cleared{e.results, e.inputs} {
		for p, c := range cs {
			if p.msg >= from {
				b.Cleared = append(b.Cleared, c)
			}
		}
	}
	slices.SortFunc(b.Cleared, func(x, y history.Cleared) int {
		return cmp.Or(cmp.Compare(x.Msg, y.Msg), strings.Compare(x.CallID, y.CallID), compareBool(x.Input, y.Input))
	})
	return b
}

// compareBool orders false before true.
func compareBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case !x:
		return -1
	}
	return 1
}
