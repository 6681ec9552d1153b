package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// eventsOf reads every event conversation conv's log keeps.
func eventsOf(t *testing.T, l EventLog, conv string) []Event {
	t.Helper()
	var evs []Event
	for after := int64(0); ; {
		page, err := l.Since(context.Background(), conv, after)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			return evs
		}
		evs = append(evs, page.Events...)
		after = page.Events[len(page.Events)-1].Seq
	}
}

// An event's data is bounded (MaxEventBytes): a long answer streams as
// deltas, so a delta over the bound is split into deltas that join to
// it, and any other event has its longest fields cut (a text keeps its
// start) or left out, named in its "cut" field. The stored messages hold
// them whole.
func TestAnEventIsBoundedAndALongDeltaIsSplitIntoDeltas(t *testing.T) {
	f := newFixture(t)
	f.srv.init()
	const conv = "conv_bounds"
	// 3 MB of text whose JSON is larger still: é is 2 bytes, \x01 is
	// escaped as 6
	long := strings.Repeat("é\x01a line of text ", 3<<20/20)
	f.srv.emit(conv, EventModelDelta, modelDeltaEvent{Turn: "turn_1", Kind: "text", Text: long})
	f.srv.emit(conv, EventToolStarted, toolStartedEvent{Turn: "turn_1", CallID: "c1", Name: "workspace--write", Input: json.RawMessage(`{"content":` + quote(long) + `}`)})
	f.srv.emit(conv, EventTurnFinished, turnFinishedEvent{Turn: "turn_1", Reason: "end_turn", Rounds: 1, Text: long})
	var joined strings.Builder
	var started, fin map[string]any
	for _, ev := range eventsOf(t, f.srv.log, conv) {
		if len(ev.Data) > MaxEventBytes {
			t.Errorf("event %d (%s) is %d bytes, over the bound of %d", ev.Seq, ev.Type, len(ev.Data), MaxEventBytes)
		}
		switch ev.Type {
		case EventModelDelta:
			var d modelDeltaEvent
			mustJSON(t, ev.Data, &d)
			if d.Turn != "turn_1" || d.Kind != "text" {
				t.Errorf("a piece of the delta lost its turn or kind: %s", ev.Data[:min(len(ev.Data), 80)])
			}
			joined.WriteString(d.Text)
		case EventToolStarted:
			mustJSON(t, ev.Data, &started)
		case EventTurnFinished:
			mustJSON(t, ev.Data, &fin)
		}
	}
	if joined.String() != long {
		t.Errorf("the deltas join to %d bytes, not the %d of the answer", joined.Len(), len(long))
	}
	if started == nil || started["call_id"] != "c1" || started["input"] != nil || !slices.Equal(cutOf(started), []string{"input"}) {
		t.Errorf("tool.started: call_id %v, input present %v, cut %v; want c1, no input, cut [input]", started["call_id"], started["input"] != nil, cutOf(started))
	}
	text, _ := fin["text"].(string)
	if fin == nil || fin["reason"] != "end_turn" || text == "" || !strings.HasPrefix(long, text) || len(text) >= len(long) || !slices.Equal(cutOf(fin), []string{"text"}) {
		t.Errorf("turn.finished: reason %v, text of %d bytes a prefix of the answer %v, cut %v; want end_turn, the answer's start, cut [text]", fin["reason"], len(text), strings.HasPrefix(long, text), cutOf(fin))
	}
}

func cutOf(m map[string]any) []string {
	var names []string
	cut, _ := m["cut"].([]any)
	for _, c := range cut {
		names = append(names, fmt.Sprint(c))
	}
	return names
}

// The memory of every conversation's events is bounded: past it the logs
// of the conversations idle longest are dropped whole, and the log's own
// count of bytes says so.
func TestTheEventsOfTheConversationsIdleLongestAreDroppedPastTheTotalBound(t *testing.T) {
	m := newMemoryEvents(0, 4<<20, 0)
	ctx := context.Background()
	chunk := json.RawMessage(quote(strings.Repeat("x", 64<<10)))
	for c := range 20 { // 20 conversations of 2 MiB each, 10 times the bound
		for range 32 {
			if err := m.Append(ctx, fmt.Sprint("conv_", c), EventModelDelta, chunk); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := int64(0)
	for _, l := range m.logs {
		held += int64(l.bytes)
	}
	if m.bytes > 4<<20 || m.bytes != held {
		t.Fatalf("the logs hold %d bytes (counted %d), over the bound of %d", held, m.bytes, 4<<20)
	}
	// the newest conversation keeps its events; the oldest lost them all,
	// its ids go on, and a watcher of it is told what it lost
	if evs := eventsOf(t, m, "conv_19"); len(evs) != 32 {
		t.Errorf("the newest conversation keeps %d of its 32 events", len(evs))
	}
	page, err := m.Since(ctx, "conv_0", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 0 || page.Gone != 27 || page.Restarted || !page.Evicted {
		t.Errorf("a watcher of the oldest conversation after 5: %d events, %d gone, restarted %v, evicted %v; want 0, 27 gone, evicted", len(page.Events), page.Gone, page.Restarted, page.Evicted)
	}
	if err := m.Append(ctx, "conv_0", EventNotice, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if last, _ := m.Last(ctx, "conv_0"); last != 33 {
		t.Errorf("the oldest conversation's next event is %d, want 33: its ids go on", last)
	}
}

// A conversation's events are dropped once it has been idle for the
// log's idle time, and the memory is given back.
func TestTheEventsOfAnIdleConversationAreDropped(t *testing.T) {
	m := newMemoryEvents(0, 0, time.Hour)
	ctx := context.Background()
	for _, c := range []string{"conv_a", "conv_b"} {
		if err := m.Append(ctx, c, EventNotice, json.RawMessage(`{"text":"hello"}`)); err != nil {
			t.Fatal(err)
		}
	}
	m.logs["conv_a"].last = time.Now().Add(-2 * time.Hour) // idle for 2 hours
	m.sweep(time.Now())
	if page, _ := m.Since(ctx, "conv_a", 0); len(page.Events) != 0 || page.Gone != 1 || !page.Evicted {
		t.Errorf("the idle conversation: %d events, %d gone, evicted %v; want none, 1 gone, evicted", len(page.Events), page.Gone, page.Evicted)
	}
	if page, _ := m.Since(ctx, "conv_b", 0); len(page.Events) != 1 {
		t.Errorf("the conversation not idle keeps %d events, want 1", len(page.Events))
	}
	if want := int64(m.logs["conv_b"].bytes); m.bytes != want {
		t.Errorf("%d bytes counted after the sweep, want %d (conv_b's)", m.bytes, want)
	}
}

// Through the API: a watcher resuming a conversation whose events were
// dropped gets one events.lost, naming how many and where the stored
// messages are, and then the events that follow.
func TestAWatcherOfADroppedLogIsToldToReadTheStoredMessages(t *testing.T) {
	f := newFixture(t)
	f.srv.EventBytes = 1 << 20
	f.srv.init()
	a, b := f.newConversation(), f.newConversation()
	chunk := strings.Repeat("y", 32<<10)
	for _, c := range []string{a, b} {
		for range 24 { // 768 KiB each: b's push a's out
			f.srv.emit(c, EventModelDelta, modelDeltaEvent{Turn: "turn_1", Kind: "text", Text: chunk})
		}
	}
	w := f.watch(a, "Last-Event-ID", "3")
	ev := w.next(t)
	var lost lostEvent
	mustJSON(t, ev.Data, &lost)
	if ev.Type != EventLost || ev.Seq != 24 || lost.Lost != 21 || !strings.Contains(lost.Message, "/messages") {
		t.Fatalf("the first event resuming a dropped log: %s %d %s; want events.lost, id 24, 21 lost, naming /messages", ev.Type, ev.Seq, ev.Data)
	}
	f.srv.emit(a, EventNotice, noticeEvent{Turn: "turn_2", Kind: "notice", Text: "after"})
	if ev := w.next(t); ev.Seq != 25 || ev.Type != EventNotice {
		t.Fatalf("after events.lost: %s %d, want notice 25", ev.Type, ev.Seq)
	}
	if status, _ := f.do("GET", "/v1/conversations/"+a+"/messages", ""); status != http.StatusOK {
		t.Fatalf("the stored messages: %d", status)
	}
}
