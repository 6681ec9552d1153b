package sse

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r io.Reader) ([]Event, error) {
	t.Helper()
	s := NewReader(r)
	var evs []Event
	for s.Next() {
		ev := s.Event()
		evs = append(evs, Event{Name: ev.Name, Data: append([]byte(nil), ev.Data...)})
	}
	return evs, s.Err()
}

func TestReaderDispatchesEventsAsTheFormatSays(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []string // name|data
	}{
		{"named events", "event: a\ndata: {\"x\":1}\n\nevent: b\ndata: 2\n\n", []string{"a|{\"x\":1}", "b|2"}},
		{"no name", "data: [DONE]\n\n", []string{"|[DONE]"}},
		{"CRLF", "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []string{"a|1", "|2"}},
		{"data lines joined by LF", "data: one\ndata: two\n\n", []string{"|one\ntwo"}},
		{"no space after the colon", "event:a\ndata:1\n\n", []string{"a|1"}},
		{"only one space taken", "data:  two spaces\n\n", []string{"| two spaces"}},
		{"comments and unknown fields skipped", ": ping\nid: 7\nretry: 10\nfoo: bar\ndata: x\n\n", []string{"|x"}},
		{"a name with no data is dropped", "event: ping\n\ndata: x\n\n", []string{"|x"}},
		{"blank lines between events", "\n\n\ndata: x\n\n\n\ndata: y\n\n", []string{"|x", "|y"}},
		{"an empty data field dispatches", "data\n\n", []string{"|"}},
		{"an unfinished last event is not dispatched", "data: x\n\ndata: half", []string{"|x"}},
		{"an unfinished event with its line end is not dispatched", "data: x\n\ndata: half\n", []string{"|x"}},
		{"the name does not carry over", "event: a\ndata: 1\n\ndata: 2\n\n", []string{"a|1", "|2"}},
		{"empty stream", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.stream), iotest.OneByteReader(strings.NewReader(tc.stream))} {
				evs, err := readAll(t, r)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, ev := range evs {
					got = append(got, ev.Name+"|"+string(ev.Data))
				}
				if strings.Join(got, "\n~\n") != strings.Join(tc.want, "\n~\n") {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func TestReaderReadsLinesLongerThanItsBuffer(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	evs, err := readAll(t, strings.NewReader("event: big\ndata: "+big+"\n\ndata: after\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s: %d bytes of %q", e.Name, len(e.Data), strings.Trim(string(e.Data), "x")))
	}
	if want := []string{fmt.Sprintf(`big: %d bytes of ""`, len(big)), `: 5 bytes of "after"`}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestReaderSaysWhatStoppedTheStream(t *testing.T) {
	broken := errors.New("connection reset")
	s := NewReader(io.MultiReader(strings.NewReader("data: 1\n\ndata: 2"), iotest.ErrReader(broken)))
	if !s.Next() || string(s.Event().Data) != "1" {
		t.Fatalf("first event: %q", s.Event().Data)
	}
	if s.Next() {
		t.Fatalf("an event after the error: %q", s.Event().Data)
	}
	if !errors.Is(s.Err(), broken) {
		t.Fatalf("Err() = %v, want %v", s.Err(), broken)
	}
	if s.Next() {
		t.Fatal("Next after an error returned true")
	}
}

func TestReaderCostsNoAllocationPerEventOnceWarm(t *testing.T) {
	ev := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
	s := NewReader(strings.NewReader(strings.Repeat(ev, 2000)))
	s.Next() // warm: the buffers and the name
	events := 0
	allocs := testing.AllocsPerRun(10, func() {
		for range 100 {
			if !s.Next() {
				t.Fatal(s.Err())
			}
			events++
		}
	})
	if events != 1100 || allocs > 0 {
		t.Fatalf("%v allocations per 100 events (%d read)", allocs, events)
	}
}

// TestAlternatingEventNamesCostNoAllocationOnceSeen pins a stream whose
// events change their name every time (as a tool call's start, delta and
// stop do): each name is made a string once.
func TestAlternatingEventNamesCostNoAllocationOnceSeen(t *testing.T) {
	var one strings.Builder
	for _, name := range []string{"content_block_start", "content_block_delta", "content_block_stop"} {
		one.WriteString("event: " + name + "\ndata: {\"type\":\"" + name + "\"}\n\n")
	}
	s := NewReader(strings.NewReader(strings.Repeat(one.String(), 2000)))
	var got []string
	for range 3 { // warm: the buffers and the names
		if !s.Next() {
			t.Fatal(s.Err())
		}
		got = append(got, s.Event().Name)
	}
	if strings.Join(got, " ") != "content_block_start content_block_delta content_block_stop" {
		t.Fatalf("names %q", got)
	}
	allocs := testing.AllocsPerRun(10, func() {
		for range 99 {
			if !s.Next() {
				t.Fatal(s.Err())
			}
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per 99 events of three names", allocs)
	}
}
