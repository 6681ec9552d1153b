package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/historytest"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
)

// A turn's end packs the view of a long conversation with its mark, and a
// restarted process reads the conversation from that pack (unpacking it,
// not stepping its rows) to the request the running process sends — which
// reads it from what it packed —, byte for byte, on every wire.
func TestARestartReadsALongConversationFromItsPackToTheSameRequestBytes(t *testing.T) {
	ctx := context.Background()
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			r := newWireRig(t, wire)
			r.agent.ContextWindow = 100_000_000 // nothing summarised
			r.srv.Push(providertest.Step{Text: "first"})
			r.turn("turn one")
			appendLongConversation(t, r)
			r.srv.Push(providertest.Step{Text: "packed"})
			r.turn("turn two") // its end packs the view
			m, tail, err := history.ReadMarked(ctx, r.agent.Store, r.id)
			if err != nil {
				t.Fatal(err)
			}
			pm, err := readMark(m.Facts)
			if err != nil || len(tail) != 0 || pm.at >= m.From {
				t.Fatalf("after a turn over %d stored messages the mark is at %d with %d messages after it, its pack from %d (%v): want the whole view packed", m.From+len(tail), m.From, len(tail), pm.at, err)
			}
			send := r.sent
			running := send(r.agent)
			fresh, whole := r.newAgent(), r.newAgent()
			fresh.ContextWindow, whole.ContextWindow = r.agent.ContextWindow, r.agent.ContextWindow
			restarted := send(fresh)
			whole.Store = unmarked{whole.Store}
			if read := send(whole); running != read || restarted != read {
				t.Fatalf("the requests differ: read from the pack by the running process (%d bytes) %v, by a restarted one (%d bytes) %v, from the rows (%d bytes)",
					len(running), running == read, len(restarted), restarted == read, len(read))
			}
			if len(fresh.packsOf().m) != 1 {
				t.Fatal("the restarted process did not read the conversation from its pack")
			}
			if !strings.Contains(running, "done 699") || !strings.Contains(running, "packed") {
				t.Fatal("the request does not hold the conversation's last messages")
			}
		})
	}
}

// Every reader answers over a tail read from a mark with a pack — the
// pack's messages, then the rows after the mark — as over the same tail
// read from the rows, for generated conversations with marks at every
// place a reader allows, packed up to every later place.
func TestAPackedTailReadsAsTheRowsItHolds(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		stored := storedForm(t, historytest.Generated(seed))
		for n := 1; n <= len(stored); n += 1 + n/8 {
			whole := wholeState(stored[:n])
			at := markFrom(&whole, window.GatherTail(whole.tail))
			facts, err := json.Marshal(whole.factsAt(at))
			if err != nil {
				t.Fatal(err)
			}
			rows, rg, rok := (&Agent{}).markedState("c", markOf(at, facts), stored[at:])
			for from := at; from <= n; from++ {
				m := history.Mark{From: from, Facts: appendMark(nil, facts, newPackID(), at, stored[at:from])}
				st, g, ok := (&Agent{}).markedState("c", m, stored[from:])
				if ok != rok {
					t.Fatalf("seed %d: a mark at %d packing from %d is used: %v; from the rows: %v", seed, from, at, ok, rok)
				}
				if !ok {
					continue
				}
				if got := st.tail.Messages(); cap(got) != len(got) {
					t.Fatalf("seed %d: a tail unpacked has room past its length (%d, cap %d): an append by a holder would write into what the next read is given", seed, len(got), cap(got))
				}
				if !reflect.DeepEqual(st.tail.Messages(), rows.tail.Messages()) {
					t.Fatalf("seed %d: the messages of a mark at %d packing from %d differ from the rows'", seed, from, at)
				}
				if st.packed != from || st.tail.From() != at || g.Least() != rg.Least() || g.End() != rg.End() {
					t.Fatalf("seed %d: a mark at %d packing from %d reads as a tail from %d to %d (Least %d; from the rows %d)", seed, from, at, st.tail.From(), g.End(), g.Least(), rg.Least())
				}
			}
		}
	}
}

// storedForm is msgs as a store reads them back (what a pack holds).
func storedForm(t *testing.T, msgs []history.Message) []history.Message {
	t.Helper()
	s := &history.Memory{}
	storeConversation(t, s, msgs)
	out, err := s.Messages(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A running process reads a conversation from the pack it keeps, not
// unpacking it again at each request: a pack the store now holds damaged
// under the same id is not looked at, while a process that never had it
// cannot use it and reads the conversation whole.
func TestARunningProcessReadsItsPackFromWhatItKept(t *testing.T) {
	ctx := context.Background()
	s, a, m, pm := packedConversation(t)
	damaged := history.Mark{From: m.From, Facts: append(appendMark(nil, pm.facts, pm.id, pm.at, nil), 0xff)}
	if err := s.SetMark(ctx, "c", damaged); err != nil {
		t.Fatal(err)
	}
	stored, err := s.Messages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st, _, err := a.load(ctx, "c", false); err != nil || st.packed != m.From || !reflect.DeepEqual(st.tail.Messages(), stored[pm.at:]) {
		t.Fatalf("the process that packed the view reads from %d (%v); want its pack's place %d and the stored messages", st.tail.From(), err, pm.at)
	}
	if st, _, err := (&Agent{Store: s}).load(ctx, "c", false); err != nil || st.packed != 0 || len(st.tail.Messages()) != len(stored) {
		t.Fatalf("a fresh process given a damaged pack reads from %d (%v); want the whole conversation", st.tail.From(), err)
	}
}

// longRounds is a conversation of n rounds: a prompt, an answer with
// usage, and nothing summarised.
func longRounds(n int) []history.Message {
	var msgs []history.Message
	for i := range n {
		msgs = append(msgs, markPrompt(fmt.Sprint("p", i)), markAnswer(fmt.Sprint("a", i), 100+i))
	}
	return msgs
}

// A turn's end packs the view anew once enough was stored past the pack:
// packMin messages, and an eighth of those the pack holds.
func TestPackDue(t *testing.T) {
	for _, c := range []struct {
		from, packed, end int
		due               bool
	}{
		{0, 0, packMin - 1, false},
		{0, 0, packMin, true},
		{0, 8000, 8000 + packMin, false},
		{0, 8000, 9000, true},
		{0, 8000, 8999, false},
		{4000, 8000, 8499, false}, // an eighth of the pack, whose view starts at 4000
		{4000, 8000, 8500, true},
		{0, 80000, 89999, false},
		{0, 80000, 90000, true},
	} {
		st := readState{tail: window.NewTail(c.from, make([]history.Message, c.end-c.from), window.Before{}), packed: c.packed}
		if got := packDue(&st, c.from); got != c.due {
			t.Errorf("view from %d, packed to %d, %d stored: due %v; want %v", c.from, c.packed, c.end, got, c.due)
		}
	}
}

// The packs an agent keeps unpacked are bounded: past maxPacks, the one
// used longest ago goes; a deleted conversation's goes with its record.
func TestTheUnpackedPacksAreBounded(t *testing.T) {
	a := &Agent{Store: &history.Memory{}}
	for i := range maxPacks + 3 {
		if i == maxPacks {
			// c0 used again: c1 is the oldest
			if _, err := a.unpack("c0", packedMark{id: a.packsOf().m["c0"].id}, 1, nil); err != nil {
				t.Fatal(err)
			}
		}
		a.keepPack(fmt.Sprint("c", i), newPackID(), 0, 1, make([]history.Message, 1))
	}
	if len(a.packsOf().m) != maxPacks {
		t.Fatalf("%d packs kept; want %d", len(a.packsOf().m), maxPacks)
	}
	for _, gone := range []string{"c1", "c2", "c3"} {
		if a.packsOf().m[gone] != nil {
			t.Errorf("%s, among the least recently used, is kept", gone)
		}
	}
	if a.packsOf().m["c0"] == nil {
		t.Error("c0, used again, is gone")
	}
	a.forgetRecord("c0")
	if a.packsOf().m["c0"] != nil {
		t.Error("a deleted conversation's pack is kept")
	}
}

// Requests read a conversation from its pack at once, each given the
// messages to its own read's end, none seeing another's change (run with
// -race).
func TestReadsFromAKeptPackAtOnceSeeTheirOwnMessages(t *testing.T) {
	stored := storedForm(t, longRounds(50))
	a := &Agent{Store: &history.Memory{}}
	pid := newPackID()
	a.keepPack("c", pid, 0, 20, stored[:20:20])
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := 20 + w; end <= len(stored); end += 4 {
				got, err := a.unpack("c", packedMark{id: pid}, 20, stored[20:end])
				if err != nil || len(got) != end || cap(got) != end || !reflect.DeepEqual(got, stored[:end]) {
					t.Errorf("a read to %d got %d messages (cap %d, %v)", end, len(got), cap(got), err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A view whose bytes are past maxPackBytes is not packed: its mark, when
// the facts' place moves on, holds no pack, and a turn's end does not
// pack it.
func TestAViewTooLargeToPackIsNotPacked(t *testing.T) {
	defer func(n int) { maxPackBytes = n }(maxPackBytes)
	ctx := context.Background()
	stored := longRounds(400)
	maxPackBytes = packBytes(stored) - 1
	s := &history.Memory{}
	storeConversation(t, s, stored)
	a := &Agent{Store: s}
	st, g, err := a.load(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	a.keepMark(ctx, "c", &st, g, nil, true, func(Event) {})
	if m, _, err := s.Marked(ctx, "c"); err != nil || m.From != 0 {
		t.Fatalf("a view past the bound was packed: a mark at %d (%v)", m.From, err)
	}
	maxPackBytes = packBytes(stored)
	a.keepMark(ctx, "c", &st, g, nil, true, func(Event) {})
	if m, _, err := s.Marked(ctx, "c"); err != nil || m.From != len(stored) {
		t.Fatalf("a view at the bound was not packed: a mark at %d (%v)", m.From, err)
	}
}

// A turn's end packs a long conversation's view once; the next turns,
// which store too little past the pack, neither pack it again nor read
// the conversation whole, in this process or a fresh one.
func TestATurnsEndPacksOnceUntilEnoughIsStoredPastThePack(t *testing.T) {
	ctx := context.Background()
	var sets, marked, whole atomic.Int64
	s := countingMarks{&history.Memory{}, &sets, &marked, &whole}
	storeConversation(t, s, longRounds(400))
	for turn := range 3 {
		a := roundsAgent(t, s, 1, 100) // a fresh process a turn
		if _, err := a.Turn(ctx, "c", fmt.Sprint("go on ", turn), func(Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	m, tail, _ := s.Memory.Marked(ctx, "c")
	if sets.Load() != 1 || whole.Load() != 0 || m.From != 800+4 || len(tail) != 8 {
		t.Fatalf("three turns set %d marks (the last at %d, %d messages after it) and read whole %d times; want one mark, at the first turn's end", sets.Load(), m.From, len(tail), whole.Load())
	}
}

// An agent whose Store is another one holding the same mark (a copy of
// the same SQLite file, a restored backup, or simply a.Store set to
// another store) reads the messages after the mark that store holds, not
// those the first store held (found by the review of slice 3: the
// unpacked packs were kept by conversation and pack id alone).
func TestAPackKeptForOneStoreIsNotUsedForAnother(t *testing.T) {
	ctx := context.Background()
	base := storedForm(t, longRounds(400))
	s1, s2 := &history.Memory{}, &history.Memory{}
	storeConversation(t, s1, base)
	storeConversation(t, s2, base)
	a := &Agent{Store: s1}
	st, g, err := a.load(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	a.keepMark(ctx, "c", &st, g, nil, true, func(Event) {})
	m, _, err := s1.Marked(ctx, "c")
	if err != nil || m.From != len(base) {
		t.Fatalf("no pack: mark at %d (%v)", m.From, err)
	}
	// the same mark in the second store (as a copy of the file holds it)
	if err := s2.SetMark(ctx, "c", m); err != nil {
		t.Fatal(err)
	}
	// each store goes on differently after the mark
	if err := s1.Append(ctx, "c", markPrompt("one's prompt"), markAnswer("one's answer", 5000)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.load(ctx, "c", false); err != nil { // the cache now holds s1's two messages after From
		t.Fatal(err)
	}
	if err := s2.Append(ctx, "c", markPrompt("two's prompt"), markAnswer("two's answer", 6000)); err != nil {
		t.Fatal(err)
	}
	a.Store = s2
	st, _, err = a.load(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s2.Messages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	// after the mark (before it, the pack is store one's, with its times)
	got := st.tail.Messages()[m.From-st.tail.From():]
	if !reflect.DeepEqual(got, want[m.From:]) {
		last := got[len(got)-1]
		t.Fatalf("reading store two, the agent's tail ends with %q; store two holds %q", last.Text(), want[len(want)-1].Text())
	}
}

// A long conversation packed again and again at turns' ends (each pack
// made by the running process from the view it read from its previous
// pack's cached messages) is read by the running process, by a restarted
// one (unpacking the last pack) and whole to the same request bytes, at
// every step.
func TestRepeatedRepacksReadAsTheRows(t *testing.T) {
	ctx := context.Background()
	r := newWireRig(t, "anthropic")
	r.agent.ContextWindow = 100_000_000
	r.srv.Push(providertest.Step{Text: "first"})
	r.turn("turn one")
	send := r.sent
	var pids []packID
	for step := range 3 {
		appendLongConversation(t, r)
		r.srv.Push(providertest.Step{Text: fmt.Sprint("packed ", step)})
		r.turn(fmt.Sprint("turn ", step))
		m, _, err := history.ReadMarked(ctx, r.agent.Store, r.id)
		if err != nil {
			t.Fatal(err)
		}
		pm, err := readMark(m.Facts)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pm.id)
		running := send(r.agent)
		fresh, whole := r.newAgent(), r.newAgent()
		fresh.ContextWindow, whole.ContextWindow = r.agent.ContextWindow, r.agent.ContextWindow
		restarted := send(fresh)
		whole.Store = unmarked{whole.Store}
		read := send(whole)
		if running != read || restarted != read {
			t.Fatalf("step %d: running %v, restarted %v equal to the rows' request", step, running == read, restarted == read)
		}
	}
	if pids[0] == pids[1] || pids[1] == pids[2] {
		t.Fatal("the view was not packed again: the test tests nothing")
	}
}

// Messages kept after a pack give way to those the store holds now: a
// store that lost its last messages and stored others in their places (a
// failed-over database, a restored file) is read as it is.
func TestMessagesKeptPastAPackGiveWayToTheStores(t *testing.T) {
	stored := storedForm(t, longRounds(40))
	other := storedForm(t, longRounds(40))
	a := &Agent{Store: &history.Memory{}}
	pid := newPackID()
	a.keepPack("c", pid, 0, 20, stored[:20:20])
	if _, err := a.unpack("c", packedMark{id: pid}, 20, stored[20:30]); err != nil {
		t.Fatal(err)
	}
	tail := append(append([]history.Message(nil), stored[20:25]...), other[25:28]...)
	got, err := a.unpack("c", packedMark{id: pid}, 20, tail)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]history.Message(nil), stored[:25]...), other[25:28]...)
	if !reflect.DeepEqual(got, want) || cap(got) != len(got) {
		t.Fatalf("after the store lost places 25 to 29 and stored others, a read gives %d messages (cap %d), not the store's", len(got), cap(got))
	}
	if again, _ := a.unpack("c", packedMark{id: pid}, 20, tail); !reflect.DeepEqual(again, want) {
		t.Fatal("the next read does not give the store's messages either")
	}
}

// A clone of an agent (the HTTP API's per-turn settings) reads a
// conversation from the pack its agent unpacked, not unpacking it again;
// so does the agent from what a clone unpacked.
func TestAClonesReadsUseThePackItsAgentKept(t *testing.T) {
	ctx := context.Background()
	s, a, m, pm := packedConversation(t)
	if u := a.packsOf().m["c"]; u == nil || cap(u.msgs) != len(u.msgs) {
		t.Fatal("the packed view is not kept, or kept with room past its length (an append by a holder would write into it)")
	}
	// the pack in the store damaged under the same id: only what is kept reads
	if err := s.SetMark(ctx, "c", history.Mark{From: m.From, Facts: append(appendMark(nil, pm.facts, pm.id, pm.at, nil), 0xff)}); err != nil {
		t.Fatal(err)
	}
	if st, _, err := a.Clone().load(ctx, "c", false); err != nil || st.packed != m.From {
		t.Fatalf("a clone reads its conversation whole (%v); want it read from the pack its agent kept, to %d", err, m.From)
	}
}

// A turn that fails does not pack the view at its end.
func TestATurnThatFailsDoesNotPack(t *testing.T) {
	ctx := context.Background()
	var sets, marked, whole atomic.Int64
	s := countingMarks{&history.Memory{}, &sets, &marked, &whole}
	storeConversation(t, s, longRounds(400))
	w := testWires["anthropic"]
	srv := w.server(t)
	p, err := w.provider(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{Provider: p, Store: s, Tools: &tool.Registry{}, Model: "claude-test", ContextWindow: 1_000_000, DropUnreached: false}
	if _, err := a.Turn(ctx, "c", "go on", func(Event) {}); err == nil {
		t.Fatal("a turn whose provider has nothing to answer did not fail")
	}
	if sets.Load() != 0 {
		t.Fatalf("a failed turn set %d marks at its end", sets.Load())
	}
}

// A clone whose caller then gives it another Store keeps packs of its
// own: the agent's, kept for the agent's store, stay (found by the
// review of the pack cache: the clone dropped them, and the two then
// dropped each other's).
func TestACloneOnAnotherStoreLeavesItsAgentsPacks(t *testing.T) {
	stored := storedForm(t, longRounds(40))
	a := &Agent{Store: &history.Memory{}}
	a.keepPack("c", newPackID(), 0, 20, stored[:20:20])
	c := a.Clone()
	c.Store = &history.Memory{}
	c.keepPack("d", newPackID(), 0, 20, stored[:20:20])
	if a.packsOf().m["c"] == nil {
		t.Fatal("the agent's unpacked pack of c was dropped by a clone reading another store")
	}
	if c.packsOf() == a.packsOf() || c.packsOf().m["d"] == nil {
		t.Fatal("the clone on another store does not keep packs of its own")
	}
}

// packedConversation is conversation "c" of 400 rounds in a Memory, its
// view packed at a turn's end by agent a: the store, a, its mark and the
// mark's facts read.
func packedConversation(t *testing.T) (*history.Memory, *Agent, history.Mark, packedMark) {
	t.Helper()
	ctx := context.Background()
	s := &history.Memory{}
	storeConversation(t, s, storedForm(t, longRounds(400)))
	a := &Agent{Store: s}
	st, g, err := a.load(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	a.keepMark(ctx, "c", &st, g, nil, true, func(Event) {})
	m, _, err := s.Marked(ctx, "c")
	if err != nil || m.From != st.end() {
		t.Fatalf("a turn's end over %d messages kept a mark at %d (%v)", st.end(), m.From, err)
	}
	pm, err := readMark(m.Facts)
	if err != nil {
		t.Fatal(err)
	}
	return s, a, m, pm
}

// A summary stored in a turn's last fit moves the mark's place only with
// the turn's final answer (Least stays at the start of the view the last
// counted answer's request had until a new counted answer is stored).
// fit's keepMark ran before that answer, so the turn's end keeps the mark
// at its new place, however few messages stand past the pack (found by
// the review of the turn's end that stops early: it left the
// conversation without a mark, and a restart read it whole).
func TestAMarkAMoveOfTheLastAnswerAllowsIsKeptAtTheTurnsEnd(t *testing.T) {
	var stored []history.Message
	for i := range 10 {
		stored = append(stored, markPrompt(fmt.Sprint("p", i)), markAnswer(fmt.Sprint("a", i), 100+i))
	}
	// as fit stores it in the turn's only request, before that request
	stored = append(stored, history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 14, Text: "summary"}}})
	s := &history.Memory{}
	storeConversation(t, s, stored)
	ctx := context.Background()
	a := roundsAgent(t, s, 0, 100) // one request, its answer counted
	if _, err := a.Turn(ctx, "c", "go on", func(Event) {}); err != nil {
		t.Fatal(err)
	}
	all, err := s.Messages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	least, why := leastFrom(all, false)
	m, _, err := s.Marked(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	if m.From > 0 {
		pm, err := readMark(m.Facts)
		if err != nil {
			t.Fatal(err)
		}
		at = pm.at
	}
	if least == 0 {
		t.Fatalf("setup: leastFrom is 0 (%s)", why)
	}
	if at != least {
		t.Fatalf("after a turn whose last fit summarised (%d messages, leastFrom %d: %s), the mark kept is From %d with facts at %d: a restart reads from %d, not %d", len(all), least, why, m.From, at, at, least)
	}
}

// The list a pack is unpacked into keeps its room when it is kept: the
// next read of the conversation (a turn reads it at its start and again
// to fit its first request, a message later) appends the messages stored
// since into it, where copying the whole list cost a fresh 100k resume
// some 7 ms.
func TestTheNextReadAppendsToAnUnpackedPackInPlace(t *testing.T) {
	stored := storedForm(t, longRounds(50))
	a := &Agent{Store: &history.Memory{}}
	m := packedMark{id: newPackID(), pack: history.AppendPacked(nil, stored[:80])}
	first, err := a.unpack("c", m, 80, stored[80:81])
	if err != nil {
		t.Fatal(err)
	}
	next, err := a.unpack("c", m, 80, stored[80:82])
	if err != nil || !reflect.DeepEqual(next, stored[:82]) {
		t.Fatalf("the next read: %d messages, %v; want the 82 stored", len(next), err)
	}
	if &next[0] != &first[0] {
		t.Error("the next read copied the unpacked list instead of appending to it")
	}
	if cap(first) != 81 || cap(next) != 82 {
		t.Errorf("the reads' lists have room (caps %d and %d): a caller's append would write into the kept list", cap(first), cap(next))
	}
}

// Readers of one kept pack, on an agent and its clones, each reading a
// tail of its own length (some shorter than what is kept), some with a
// message of their own at a place (taken over by extend's copy): every
// list handed out stays as it was handed out while the others append
// into the kept list's room (run with -race; from a review).
func TestListsHandedOutOfAKeptPackStayAsTheyWereWhileOthersExtendIt(t *testing.T) {
	stored := storedForm(t, longRounds(60))
	other := storedForm(t, longRounds(60))
	a := &Agent{Store: &history.Memory{}}
	m := packedMark{id: newPackID(), pack: history.AppendPacked(nil, stored[:80])}
	type got struct {
		list []history.Message
		want []history.Message
	}
	var mu sync.Mutex
	var all []got
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			ag := a
			if g%2 == 1 {
				ag = a.Clone()
			}
			for n := range 30 {
				end := 81 + (n*7+g*3)%39
				tail := stored[80:end]
				want := stored[:end]
				if (n+g)%5 == 0 { // a message of its own at place 80+
					tail = append(append([]history.Message{}, other[80]), stored[81:end]...)
					want = append(append(append([]history.Message{}, stored[:80]...), other[80]), stored[81:end]...)
				}
				list, err := ag.unpack("c", m, 80, tail)
				if err != nil {
					t.Error(err)
					return
				}
				for i := range list { // read every place while others extend
					_ = list[i].Role
				}
				mu.Lock()
				all = append(all, got{list, want})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, g := range all {
		if len(g.list) != len(g.want) || cap(g.list) != len(g.list) {
			t.Fatalf("read %d: len %d cap %d, want %d", i, len(g.list), cap(g.list), len(g.want))
		}
		if !reflect.DeepEqual(g.list, g.want) {
			t.Fatalf("read %d: changed after it was handed out", i)
		}
	}
}
