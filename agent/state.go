package agent

import (
	"fmt"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/window"
)

// readState is a conversation as a turn's start and fit read it: its
// stored messages from place From on (a window.Tail, places absolute),
// and the facts of the messages before From that the readers need — the
// last settings stored, and how many of them are records. Every reader
// of a turn's start (recover, continuingOf, newBudget, checkSettings,
// droppable) and of fit (the plan, the request, clearing, a summary)
// takes one instead of the whole message list, so that a store that keeps
// the facts can serve a resume without reading the older messages (issue
// 34). A turn reads one through load (mark.go): from the mark the store
// keeps (history.Mark), whose facts are these, or whole (wholeState:
// From 0) when it keeps none the agent can use, or the turn holds a cost
// budget; stateOf makes one from a later From out of the whole list, for
// the tests that hold each reader's answer over it equal to its answer
// over the whole list.
//
// It is agent's, over window.Tail, because what it adds (settings, a
// record count) is not the window's to know, and the window's facts are
// not the agent's to compute. A reader must read its messages through
// the tail (window.Tail.At panics before From): none may be indexed from 0.
type readState struct {
	tail window.Tail
	// packed is the From of the mark st was read from: its pack holds the
	// stored messages from the tail's From to packed (pack.go); 0 for a
	// whole read, and the tail's From for a mark without a pack
	packed int
	// settings is the last Settings stored before From; nil when none
	settings *history.Settings
	// records is how many records stand before From
	records int
	// counted is whether an answer whose usage counts its request
	// (window.Counted) stands before From; used, whether an answer with
	// usage does
	counted, used bool
}

// wholeState is the readState of the whole of stored: From 0.
func wholeState(stored []history.Message) readState {
	return readState{tail: window.Whole(stored)}
}

// stateOf is the readState of stored from place from on, its facts
// computed from the whole list (a store would keep them instead). dollars
// is whether the turn holds a cost budget. It fails, saying which reader
// needs what, for a from past leastFrom.
func stateOf(stored []history.Message, from int, dollars bool) (readState, error) {
	if least, why := leastFrom(stored, dollars); from > least {
		return readState{}, fmt.Errorf("reading a conversation of %d stored messages from place %d: %s, so it must be read from place %d or before", len(stored), from, why, least)
	}
	tail, err := window.TailOf(stored, from)
	if err != nil {
		return readState{}, err
	}
	st := readState{tail: tail}
	for i := range stored[:from] {
		if s := stored[i].Settings; s != nil {
			st.settings = s
		}
		if stored[i].IsRecord() {
			st.records++
		}
		st.counted = st.counted || window.Counted(&stored[i])
		st.used = st.used || withUsage(&stored[i])
	}
	return st, nil
}

// leastFrom is the greatest From from which a readState of stored gives
// every reader the answer it gives over the whole list, and why it is not
// greater. Besides the window's readers (window.Least: the view's start,
// and the start of the request the last counted answer counted):
//
//   - recover answers the calls of the last message that is not a
//     record: From is at most its place;
//   - a continued turn (continuingOf) and the budgets (newBudget's
//     turnStart) read from the last prompt on: From is at most its place;
//   - the budgets' last cached usage (lastCached) is the last answer with
//     usage: From is at most its place;
//   - with a cost budget (dollars), the conversation's cost prices every
//     answer under the settings in force at it: From is 0.
//
// checkSettings needs only the last settings before From, droppable only
// whether anything is stored, and a summary only how many records stand
// before From: those are facts, not bounds.
func leastFrom(stored []history.Message, dollars bool) (from int, why string) {
	from, why = window.Least(stored)
	if dollars {
		return 0, "a cost budget prices every stored answer"
	}
	bound := func(place int, what string) {
		if place >= 0 && place < from {
			from, why = place, fmt.Sprintf("%s, at place %d", what, place)
		}
	}
	last, prompt, usage := -1, -1, -1
	for i := len(stored) - 1; i >= 0 && (last < 0 || prompt < 0 || usage < 0); i-- {
		m := &stored[i]
		if last < 0 && !m.IsRecord() {
			last = i
		}
		if prompt < 0 && m.Role == history.User && !m.HoldsResults() {
			prompt = i
		}
		if usage < 0 && withUsage(m) {
			usage = i
		}
	}
	bound(last, "recovering reads the last message that is not a record")
	bound(prompt, "a continued turn and the turn's budget read from the last prompt")
	bound(usage, "the budgets read the last answer with usage")
	return from, why
}

// end is the number of messages stored: the place the next one takes.
func (st *readState) end() int { return st.tail.End() }

// lastMessage is the last stored message that is not a record; false
// when there is none.
func (st *readState) lastMessage() (history.Message, bool) {
	if i := st.lastMessagePlace(); i >= 0 {
		return *st.tail.At(i), true
	}
	return history.Message{}, false // and none before From either (leastFrom)
}

// lastMessagePlace is the place of the last stored message that is not a
// record, or -1.
func (st *readState) lastMessagePlace() int {
	t := &st.tail
	for i := t.End() - 1; i >= t.From(); i-- {
		if !t.At(i).IsRecord() {
			return i
		}
	}
	return -1
}

// lastUsage is the place of the last answer with usage, or -1.
func (st *readState) lastUsage() int {
	t := &st.tail
	for i := t.End() - 1; i >= t.From(); i-- {
		if m := t.At(i); withUsage(m) {
			return i
		}
	}
	return -1
}

// lastPrompt is the place of the last prompt (a user message that is not
// tool results), or -1.
func (st *readState) lastPrompt() int {
	t := &st.tail
	for i := t.End() - 1; i >= t.From(); i-- {
		if m := t.At(i); m.Role == history.User && !m.HoldsResults() {
			return i
		}
	}
	return -1
}

// lastSettings is the last Settings stored; nil when none.
func (st *readState) lastSettings() *history.Settings {
	t := &st.tail
	for i := t.End() - 1; i >= t.From(); i-- {
		if s := t.At(i).Settings; s != nil {
			return s
		}
	}
	return st.settings
}

// messagesBefore is how many stored messages before place through are
// not records; through is From or after.
func (st *readState) messagesBefore(through int) int {
	t := &st.tail
	n := t.From() - st.records
	for i := t.From(); i < through; i++ {
		if !t.At(i).IsRecord() {
			n++
		}
	}
	return n
}

// withUsage reports whether m is an answer with usage: what the budgets'
// last cached usage reads (lastCachedOf), and so what bounds a tail
// (leastFrom, lastUsage, a mark's facts).
func withUsage(m *history.Message) bool {
	return m.Role == history.Assistant && m.Usage != nil
}
