package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/window"
)

// This file is how a turn reads a conversation through the mark its store
// keeps (history.Mark): the place from which every reader of a turn's
// start and of fit answers as over the whole list (leastFrom), and the
// facts of the messages before it, so that a process resuming a long
// conversation whose older part was summarised reads only its tail
// (issue 34, point 4). The agent sets the mark when the summary in force
// has moved past it; the store keeps it, and drops it when the messages
// change other than by an append (Rewind, Switch).

// markFacts are the agent's facts of the messages before a mark's From,
// kept in history.Mark.Facts as JSON: what a readState holds beside its
// tail (the last settings, the count of records) and the window's facts
// (window.Before).
type markFacts struct {
	// V is markVersion: facts of another version are not read (whole).
	V        int               `json:"v"`
	Settings *history.Settings `json:"settings,omitempty"`
	Records  int               `json:"records"`
	// Counted is whether an answer whose usage counts its request
	// (window.Counted) stands before From: then the last one must stand
	// in the tail for the mark to be used.
	Counted bool `json:"counted,omitempty"`
	// Used is whether an answer with usage stands before From: then the
	// last one must stand in the tail.
	Used   bool          `json:"used,omitempty"`
	Window window.Before `json:"window"`
}

// markVersion is the version of markFacts this agent writes and reads.
const markVersion = 2

// load is conversation id as a turn reads it: from the mark the store
// keeps, when it keeps one this agent can use, else whole. whole reads
// it whole all the same: a cost budget prices every stored answer. g is
// the tail gathered, when load gathered it (to check a mark), for the
// caller to use rather than gather it again; nil otherwise.
func (a *Agent) load(ctx context.Context, id string, whole bool) (st readState, g *window.Stored, err error) {
	if !whole {
		m, msgs, err := history.ReadMarked(ctx, a.Store, id)
		if err != nil {
			return readState{}, nil, err
		}
		if m.From == 0 {
			return wholeState(msgs), nil, nil
		}
		if st, g, ok := a.markedState(id, m, msgs); ok {
			return st, g, nil
		}
		// a mark this agent cannot use (another version's, or one that
		// no longer holds): read whole, and the next fit or turn's end
		// sets it again
	}
	msgs, err := a.Store.Messages(ctx, id)
	if err != nil {
		return readState{}, nil, err
	}
	return wholeState(msgs), nil, nil
}

// markedState is the readState of conversation id read from mark m on
// (msgs: the messages from m.From), its tail gathered, and whether it may
// be used: its Facts are of this version (readMark), its pack unpacks to
// the messages from the facts' place to From, and the places every reader
// needs stand in the tail — the pack's messages and msgs — at the facts'
// place or after: the last message that is not a record, the last
// prompt, the last answer whose usage counts its request, and the last
// answer with usage, when the facts say one stands before, the start of
// the view now and of the request that answer counted (Stored.Least). A
// tail without the last message or prompt cannot tell whether it stands
// before the facts' place, so such a mark is not used either. A mark that
// fails this was not set by this agent over these messages; the
// conversation is read whole.
func (a *Agent) markedState(id string, m history.Mark, msgs []history.Message) (readState, *window.Stored, bool) {
	pm, err := readMark(m.Facts)
	if err != nil || pm.at > m.From {
		return readState{}, nil, false
	}
	var f markFacts
	d := json.NewDecoder(bytes.NewReader(pm.facts))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil || f.V != markVersion || f.Records < 0 || f.Records > pm.at {
		return readState{}, nil, false
	}
	if pm.at < m.From {
		if msgs, err = a.unpack(id, pm, m.From, msgs); err != nil {
			return readState{}, nil, false
		}
	}
	st := readState{tail: window.NewTail(pm.at, msgs, f.Window), packed: m.From, settings: f.Settings, records: f.Records, counted: f.Counted, used: f.Used}
	if _, ok := st.lastMessage(); !ok || st.lastPrompt() < 0 || f.Used && st.lastUsage() < 0 {
		return readState{}, nil, false
	}
	g := window.GatherTail(st.tail)
	if f.Counted && g.LastCounted() < 0 || g.Least() < pm.at {
		return readState{}, nil, false
	}
	return st, g, true
}

// markFrom is the greatest From the readers of a turn allow, as st's tail
// tells it (leastFrom without a cost budget), given g, st's tail gathered.
// It is never below st's From when st's From is at most leastFrom of the
// whole list, and it never falls as messages are added.
func markFrom(st *readState, g *window.Stored) int {
	from := g.Least()
	if from <= st.tail.From() {
		return from
	}
	for _, p := range []int{st.lastMessagePlace(), st.lastPrompt(), st.lastUsage()} {
		if p >= 0 && p < from {
			from = p
		}
	}
	return min(from, st.end()) // a summary ending past the end, and nothing else stored
}

// factsAt are the facts of st's messages before place from (st's From or
// after, at most its end). The summary in force before from is kept by
// its Through alone when it ends before from: then a mark at from is
// used only when a record of the tail replaces it (markedState's check
// sees its Through, before From), so its text is never sent. One that
// ends at from or after (a record ending a summary after itself, which
// the agent never writes) is kept whole: it may be the one in force.
func (st *readState) factsAt(from int) markFacts {
	f := markFacts{V: markVersion, Settings: st.settings, Records: st.records, Counted: st.counted, Used: st.used, Window: st.tail.BeforeAt(from)}
	if s := f.Window.Summary; s != nil && s.Through < from {
		f.Window.Summary = &history.Summary{Through: s.Through}
	}
	for i := st.tail.From(); i < from; i++ {
		m := st.tail.At(i)
		if m.Settings != nil {
			f.Settings = m.Settings
		}
		if m.IsRecord() {
			f.Records++
		}
		f.Counted = f.Counted || window.Counted(m)
		f.Used = f.Used || withUsage(m)
	}
	return f
}

// keepMark has the store keep conversation id's mark with the facts at
// markFrom and the view's messages from there packed (pack.go), when
// markFrom is past the place of the facts st was read with — the summary
// in force moved on —, or, at a turn's end (end), when enough was stored
// past the pack kept (packDue), so that a later read, in this process or
// after a restart, reads from there. A mark that cannot be kept costs a
// later read its speed, not the turn: it is said in a notice once a
// turn, and a place that failed markTries times is not tried again that
// turn unless the place moves on (tried: the turn's; nil tries at every
// request and says every failure).
func (a *Agent) keepMark(ctx context.Context, id string, st *readState, g *window.Stored, tried *markTry, end bool, on func(Event)) {
	mk, ok := a.Store.(history.Marker)
	if !ok {
		return
	}
	if g == nil {
		g = window.GatherTail(st.tail)
	}
	from := markFrom(st, g)
	if from <= st.tail.From() && !(end && packDue(st, from)) || tried != nil && from <= tried.failed && tried.times >= markTries {
		return
	}
	facts, err := json.Marshal(st.factsAt(from))
	if err == nil {
		pid, view := newPackID(), st.tail.Messages()[from-st.tail.From():]
		m := history.Mark{From: st.end()}
		if packBytes(view) > maxPackBytes {
			// a mark without a pack, when the facts' place moved on
			if from <= st.tail.From() {
				return
			}
			m.From, view = from, nil
		}
		if m.From == 0 {
			return // nothing stored: no mark
		}
		m.Facts = appendMark(nil, facts, pid, from, view)
		if err = mk.SetMark(history.Lazy(ctx), id, m); err == nil {
			a.keepPack(id, pid, from, m.From, view[:len(view):len(view)])
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	if tried != nil {
		if from > tried.failed {
			tried.failed, tried.times = from, 0
		}
		tried.times++
		if tried.said {
			return
		}
		tried.said = true
	}
	on(Event{Kind: Notice, Text: fmt.Sprintf("the place a restart reads conversation %s from could not be kept (%v): a restart reads it from the place kept before, or whole", id, err)})
}

// markTry is what a turn remembers of the marks it could not keep: the
// place that failed last, how many times it failed, and whether the turn
// has said so.
type markTry struct {
	failed, times int
	said          bool
}

// markTries is how many times a turn tries to keep a mark at one place:
// a failure may pass (a busy database), but one that does not must not
// cost every request a failing write.
const markTries = 2
