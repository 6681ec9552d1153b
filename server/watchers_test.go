package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingWriter is an event stream's client that counts what each write
// hands it, and ends the request once it has seen want events.
type countingWriter struct {
	mu       sync.Mutex
	h        http.Header
	want     int
	events   int
	maxWrite int // the longest write that was not one event's data
	big      []byte
	shared   bool // the big event's data came as the log's own bytes
	cancel   func()
}

func (c *countingWriter) Header() http.Header { return c.h }
func (c *countingWriter) WriteHeader(int)     {}
func (c *countingWriter) Flush()              {}
func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p) > 0 && len(p) == len(c.big) && &p[0] == &c.big[0] {
		c.shared = true
	} else {
		c.maxWrite = max(c.maxWrite, len(p))
	}
	if c.events += bytes.Count(p, []byte("\nevent: ")); c.events >= c.want {
		c.cancel()
	}
	return len(p), nil
}

// A watcher copies at most watchBuffer bytes of the log before writing:
// a client that reads slowly (or never) holds that much of the server's
// memory, not every event after its place (16 MB of deltas here). An
// event larger than the buffer is written from the log's own bytes. So
// too over a log shared by processes (serve --worker), whose pages are
// copies read from the database (pagedLog).
func TestAWatcherWritesInBoundedPiecesWhateverItsBacklog(t *testing.T) {
	for _, shared := range []bool{false, true} {
		f := newFixture(t)
		if shared {
			f.srv.Events = &pagedLog{newMemoryEvents(0, 0, 0)}
		}
		f.srv.init()
		const conv = "conv_backlog"
		delta := strings.Repeat("d", 1<<10)
		for range 16 << 10 {
			f.srv.emit(conv, EventModelDelta, modelDeltaEvent{Turn: "turn_1", Kind: "text", Text: delta})
		}
		f.srv.emit(conv, EventNotice, noticeEvent{Turn: "turn_1", Kind: "notice", Text: strings.Repeat("n", 512<<10)})
		evs := eventsOf(t, f.srv.log, conv)
		ctx, cancel := context.WithCancel(context.Background())
		w := &countingWriter{h: http.Header{}, want: len(evs), cancel: cancel}
		if !shared {
			w.big = evs[len(evs)-1].Data
		}
		req := httptest.NewRequest("GET", "/v1/conversations/"+conv+"/events", nil).WithContext(ctx)
		f.srv.streamEvents(w, req, conv)
		cancel()
		if w.events != len(evs) || w.shared == shared {
			t.Fatalf("shared log %v: the watcher was written %d of the %d events; the big one from the log's own bytes: %v", shared, w.events, len(evs), w.shared)
		}
		if limit := watchBuffer + 2<<10; !shared && w.maxWrite > limit || shared && w.maxWrite > 512<<10+100 {
			t.Fatalf("shared log %v: a write of %d bytes, over the watcher's buffer of %d (and one event)", shared, w.maxWrite, limit)
		}
	}
}

// pagedLog is an EventLog as package worker's reads: at most 1000 events
// a page, each a copy.
type pagedLog struct{ *memoryEvents }

func (p *pagedLog) Since(ctx context.Context, conv string, seq int64) (EventPage, error) {
	page, err := p.memoryEvents.Since(ctx, conv, seq)
	if len(page.Events) > 1000 {
		page.Events = page.Events[:1000]
		closed := make(chan struct{})
		close(closed)
		page.More = closed
	}
	evs := make([]Event, len(page.Events))
	for i, ev := range page.Events {
		evs[i] = Event{Seq: ev.Seq, Type: ev.Type, Data: bytes.Clone(ev.Data)}
	}
	page.Events = evs
	return page, err
}

// A client that opens the stream and stops reading is dropped once a
// write waits longer than StreamWriteTimeout; it resumes with the
// Last-Event-ID of the last event it read whole, and gets what follows.
func TestAStalledWatcherIsDroppedAndResumesFromItsLastEvent(t *testing.T) {
	f := newFixture(t)
	f.srv.StreamWriteTimeout = 200 * time.Millisecond
	id := f.newConversation()
	conn, err := net.Dial("tcp", f.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/conversations/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", id) // and stop reading
	waitUntil(t, "the stream is open", func() bool { return f.srv.watchingConv(id) == 1 })
	delta := strings.Repeat("d", 32<<10)
	const n = 1024 // 32 MiB: more than the sockets' buffers hold
	for range n {
		f.srv.emit(id, EventModelDelta, modelDeltaEvent{Turn: "turn_1", Kind: "text", Text: delta})
	}
	waitUntil(t, "the stalled watcher is dropped", func() bool { return f.srv.watchingConv(id) == 0 })
	// what the connection delivered, up to where it was cut
	var last int64
	r := bufio.NewReader(conn)
	var seq int64
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		switch {
		case strings.HasPrefix(line, "id: "):
			seq, _ = strconv.ParseInt(strings.TrimSpace(line[4:]), 10, 64)
		case line == "\n" && seq > 0:
			last = seq // a whole event: an EventSource's Last-Event-ID
		}
	}
	if last >= n {
		t.Fatalf("the stalled client got every event (%d): the test did not stall it", last)
	}
	w := f.watch(id, "Last-Event-ID", strconv.FormatInt(last, 10))
	if ev := w.next(t); ev.Seq != last+1 || ev.Type != EventModelDelta {
		t.Fatalf("resuming after %d: %s %d, want model.delta %d", last, ev.Type, ev.Seq, last+1)
	}
}

// waitUntil waits for cond, failing the test after 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, still not: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The event streams open at once are bounded: per conversation, per
// client address and in all; one past a bound is a 429 naming it, and a
// stream closed makes room.
func TestEventStreamsAreBoundedPerConversationPerClientAndInAll(t *testing.T) {
	f := newFixture(t)
	f.srv.WatchersPerConversation, f.srv.WatchersPerClient = 2, 3
	a, b := f.newConversation(), f.newConversation()
	refused := func(id, bound string) {
		t.Helper()
		resp, err := http.Get(f.http.URL + "/v1/conversations/" + id + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body []byte
		if resp.StatusCode != http.StatusOK { // a stream would not end
			body, _ = io.ReadAll(resp.Body)
		}
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), bound) {
			t.Fatalf("a stream past %s: %d %s; want 429 naming it", bound, resp.StatusCode, body)
		}
	}
	first := f.watch(a)
	f.watch(a)
	refused(a, "WatchersPerConversation")
	f.watch(b)
	refused(b, "WatchersPerClient")
	first.resp.Body.Close()
	waitUntil(t, "a closed stream is uncounted", func() bool { return f.srv.watchingConv(a) == 1 })
	f.watch(b)
	f.srv.WatchersPerConversation, f.srv.WatchersPerClient, f.srv.Watchers = 100, 100, 3
	refused(f.newConversation(), "Server.Watchers")
}
