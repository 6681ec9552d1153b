package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// fillWithRequests makes n requests of session sid in st as the SDK
// stores them: each a stream of its own, opened, with a priming event
// and a 200-byte answer.
func fillWithRequests(st *eventStore, sid string, n int) {
	ctx := context.Background()
	answer := bytes.Repeat([]byte{'x'}, 200)
	for i := range n {
		id := fmt.Sprintf("%024d", i) // the SDK's stream ids are as long
		st.Open(ctx, sid, id)
		st.Append(ctx, sid, id, nil)
		st.Append(ctx, sid, id, answer)
	}
}

// Keeping the bound costs a few looks per event dropped, however many
// streams the session that loses them has opened: a host with many
// small requests kept, then another host's big answer, does not hold
// the store's one lock (every session's writes wait on it) for a scan
// of every stream per event dropped. (Before: 2 MiB of 328-byte
// requests, 6,393 streams, then a 1.5 MiB answer: its 3,197 drops
// looked at 20 million streams; at MaxEvents, 29 s in one Append.)
func TestEvictionLooksAtAFewStreamsPerDroppedEvent(t *testing.T) {
	const max = 2 << 20
	st := newEventStore(max)
	fillWithRequests(st, "a", max/(2*eventOverhead+200))
	st.visited, st.dropped = 0, 0
	st.Append(context.Background(), "b", "blob", bytes.Repeat([]byte{'y'}, max*3/4))
	if st.dropped == 0 {
		t.Fatal("the big event dropped nothing")
	}
	if per := float64(st.visited) / float64(st.dropped); per > 4 {
		t.Errorf("%d events dropped looking at %d sessions and streams: %.0f a drop, want a few", st.dropped, st.visited, per)
	}
}

// One session's many requests keep no more streams than the bound has
// room for events: a stream (other than the standing one, "") whose
// events were all dropped is forgotten, not kept empty until the
// session closes (which may never come: SessionTimeout off, or a host
// that keeps working).
func TestAStreamWhoseEventsWereAllDroppedIsForgotten(t *testing.T) {
	const max = 1 << 20
	st := newEventStore(max)
	fillWithRequests(st, "a", 20000) // some 6.3 MiB of events
	if got, most := len(st.sessions["a"].streams), max/eventOverhead; got > most {
		t.Errorf("the store keeps %d streams of one session, most of them emptied; the bound has room for %d events", got, most)
	}
	if got := kept(st, "a", fmt.Sprintf("%024d", 0), -1); got != "gone" {
		t.Errorf("a replay of a forgotten stream gave %q, want an error (the SDK answers 400)", got)
	}
}

// A session's standing stream ("") holds its notifications (list_changed,
// resources/updated), and a plain GET replays it from its start
// (After(…, "", -1)): its events are dropped only after every other
// stream of the session, so that a host whose own big reads took the
// store over its bound can still open its standing stream.
func TestTheStandingStreamsEventsAreDroppedLast(t *testing.T) {
	type event struct {
		sid, stream string
		n           int
	}
	for _, c := range []struct {
		name   string
		events []event
		sid    string
		want   [][2]string // stream of sid, its replay from its start
	}{
		{"the session's other streams go first",
			[]event{{"a", "", 100}, {"a", "s", 400}, {"a", "s", 400}, {"a", "t", 300}},
			"a", [][2]string{{"", "100"}, {"s", "purged"}, {"t", "300"}}},
		{"the standing stream goes when nothing else is left",
			[]event{{"a", "s", 100}, {"a", "", 400}, {"a", "", 400}, {"a", "", 400}},
			"a", [][2]string{{"", "purged"}, {"s", "gone"}}},
		{"another session's standing stream is not the first to go",
			[]event{{"b", "", 100}, {"a", "", 100}, {"a", "s", 600}},
			"b", [][2]string{{"", "100"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newEventStore(1000)
			for _, e := range c.events {
				st.Open(context.Background(), e.sid, e.stream)
				st.Append(context.Background(), e.sid, e.stream, bytes.Repeat([]byte{'x'}, e.n))
			}
			for _, r := range c.want {
				if got := kept(st, c.sid, r[0], -1); got != r[1] {
					t.Errorf("replaying %s's stream %q from its start gave %q, want %q", c.sid, r[0], got, r[1])
				}
			}
		})
	}
}

// A replay gives the events' bytes as kept, not copies: the SDK never
// changes an event's data once appended, and a copy of each replayed
// event doubled what a replay of a big answer held.
func TestAReplayGivesTheKeptBytesUncopied(t *testing.T) {
	st := newEventStore(1000)
	data := []byte("an answer")
	st.Open(context.Background(), "a", "s")
	st.Append(context.Background(), "a", "s", data)
	for d, err := range st.After(context.Background(), "a", "s", -1) {
		if err != nil {
			t.Fatal(err)
		}
		if &d[0] != &data[0] {
			t.Error("the replay gave a copy of the event's data")
		}
	}
}

// BenchmarkEvictionOfManySmallStreams times the Append of a big answer
// (1.5 MiB) into a 2 MiB store full of one other session's small
// requests (6,393 streams): what the eviction holds the store's lock for.
func BenchmarkEvictionOfManySmallStreams(b *testing.B) {
	const max = 2 << 20
	big := bytes.Repeat([]byte{'y'}, max*3/4)
	for b.Loop() {
		b.StopTimer()
		st := newEventStore(max)
		fillWithRequests(st, "a", max/(2*eventOverhead+200))
		b.StartTimer()
		st.Append(context.Background(), "b", "blob", big)
	}
}
