package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/myelin-run/myelin/result"
)

// Event is one event of a conversation's stream as the API sends it: an
// SSE event whose id is Seq, whose name is Type and whose data is Data,
// one line of JSON.
type Event struct {
	Seq  int64
	Type string
	Data json.RawMessage

	at time.Time // when it was appended, for the load test's latency
}

// DefaultEventsKept is how many events of one conversation the server
// keeps for watchers that resume (Last-Event-ID); older ones are dropped
// first.
const DefaultEventsKept = 100_000

// eventBytesKept bounds the data of the events one conversation keeps;
// older events are dropped first past it too (a long answer streams many
// deltas).
const eventBytesKept = 64 << 20

// eventLog is one conversation's events since the server started: its
// turns append, any number of watchers read from any sequence number at
// their own pace. An append never waits for a watcher, so a slow client
// cannot hold a turn: it only falls behind, and past what the log keeps,
// it is told what it missed (since's gone).
type eventLog struct {
	mu      sync.Mutex
	events  []Event // events[i].Seq == first+i
	first   int64   // the Seq of events[0]; sequence numbers start at 1
	next    int64   // the Seq the next append gets
	keep    int     // the most events kept; 0 means DefaultEventsKept
	bytes   int     // the data of the events kept
	changed chan struct{}
}

func newEventLog(keep int) *eventLog {
	if keep <= 0 {
		keep = DefaultEventsKept
	}
	return &eventLog{first: 1, next: 1, keep: keep, changed: make(chan struct{})}
}

// append adds an event of type typ whose data is v encoded as JSON, and
// wakes every watcher. It fails only when v does not encode.
func (l *eventLog) append(typ string, v any) (Event, error) {
	data, err := result.JSON(v) // texts as themselves: no HTML escaping
	if err != nil {
		return Event{}, fmt.Errorf("encoding a %s event: %w", typ, err)
	}
	return l.add(typ, data), nil
}

// add adds an event of type typ whose data is JSON already, and wakes
// every watcher.
func (l *eventLog) add(typ string, data json.RawMessage) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := Event{Seq: l.next, Type: typ, Data: data, at: time.Now()}
	l.next++
	l.events = append(l.events, ev)
	l.bytes += len(data)
	if over := len(l.events) - l.keep; over > 0 || l.bytes > eventBytesKept {
		// drop in bulk, so that appends stay O(1) amortised
		drop := 0
		if over > 0 {
			drop = max(over, l.keep/4)
		}
		freed := dataOf(l.events[:drop])
		for drop < len(l.events)-1 && l.bytes-freed > eventBytesKept*3/4 {
			freed += len(l.events[drop].Data)
			drop++
		}
		drop = min(drop, len(l.events)-1)
		l.bytes -= dataOf(l.events[:drop]) // freed, unless min cut it
		l.events = append(l.events[:0:0], l.events[drop:]...)
		l.first += int64(drop)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return ev
}

func dataOf(evs []Event) int {
	n := 0
	for _, e := range evs {
		n += len(e.Data)
	}
	return n
}

// since returns the events after seq, a channel closed at the next append
// (wait on it, then call since again), and gone: how many events after
// seq the log no longer holds (a watcher that fell too far behind).
//
// A seq this log never gave (restarted) is from a server process before
// this one, whose ids began again at 1: the log cannot tell which of its
// own events such a watcher saw, so it returns every event it keeps, and
// gone is how many of its own it no longer keeps.
func (l *eventLog) since(seq int64) (evs []Event, more <-chan struct{}, gone int64, restarted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq >= l.next {
		return l.events[:len(l.events):len(l.events)], l.changed, l.first - 1, true
	}
	from := seq + 1
	if from < l.first {
		gone = l.first - from
		from = l.first
	}
	evs = l.events[from-l.first:]
	return evs[:len(evs):len(evs)], l.changed, gone, false
}

// appendedAt is when event seq was appended, false when the log no longer
// holds it.
func (l *eventLog) appendedAt(seq int64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq < l.first || seq >= l.next {
		return time.Time{}, false
	}
	return l.events[seq-l.first].at, true
}

// lastSeq is the sequence number of the newest event, 0 when none.
func (l *eventLog) lastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// heartbeat is how often an idle event stream gets a comment line, so
// that proxies and clients see it alive.
const heartbeat = 15 * time.Second

// streamEvents writes the log's events after the request's Last-Event-ID
// (or its ?after= query) to w as server-sent events until the client goes
// away. A resume from further back than the log keeps gets one
// `events.lost` event first, saying how many were lost and that the
// stored messages (GET .../messages) hold what they recorded.
func streamEvents(w http.ResponseWriter, r *http.Request, l EventLog, conv string, closing <-chan struct{}) {
	after, err := resumePoint(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "this connection cannot stream events")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	var buf []byte
	for {
		page, err := l.Since(r.Context(), conv, after)
		if err != nil {
			// the client reconnects with its Last-Event-ID and is given what follows
			_, _ = fmt.Fprintf(w, ": reading the events failed: %s\n\n", strings.ReplaceAll(err.Error(), "\n", " "))
			flusher.Flush()
			return
		}
		evs, more, gone, restarted := page.Events, page.More, page.Gone, page.Restarted
		buf = buf[:0]
		switch {
		case restarted:
			// the events.lost's id is the one before the first event sent,
			// so that the watcher resumes from here if it comes back
			last := gone
			if len(evs) > 0 {
				last = evs[0].Seq - 1
			}
			data, _ := result.JSON(map[string]any{"lost": gone, "restarted": true, "message": fmt.Sprintf("event %d is not one of this server process (it started again since, and its ids began again at 1): what came after it is lost, and the events of this process follow from %d; the stored messages hold what they recorded", after, last+1)})
			buf = appendEvent(buf, Event{Seq: last, Type: "events.lost", Data: data})
			after = last
		case gone > 0:
			last := after + gone
			if len(evs) > 0 {
				last = evs[0].Seq - 1
			}
			data, _ := result.JSON(map[string]any{"lost": gone, "message": fmt.Sprintf("%d events after %d are no longer kept (the server keeps the last %d of a conversation); the stored messages hold what they recorded", gone, after, page.Kept)})
			buf = appendEvent(buf, Event{Seq: last, Type: "events.lost", Data: data})
			after = last
		}
		for _, ev := range evs {
			buf = appendEvent(buf, ev)
			after = ev.Seq
		}
		if len(buf) > 0 {
			if _, err := w.Write(buf); err != nil {
				return
			}
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-closing: // the server stops: the client resumes elsewhere or later
			return
		case <-more:
		case <-tick.C:
			if _, err := w.Write([]byte(": alive\n\n")); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// appendEvent is ev in the text/event-stream format. Data is one line of
// JSON (encoding/json escapes line breaks inside strings), so it is one
// data: line.
func appendEvent(buf []byte, ev Event) []byte {
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Type...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, ev.Data...)
	return append(buf, "\n\n"...)
}

// resumePoint is the sequence number a watcher has seen: its
// Last-Event-ID header (a reconnecting EventSource sends it), else its
// ?after= query, else 0 (from the start of what the log keeps).
func resumePoint(r *http.Request) (int64, error) {
	v, from := r.Header.Get("Last-Event-ID"), "the Last-Event-ID header"
	if v == "" {
		v, from = r.URL.Query().Get("after"), "the after parameter"
	}
	if v = strings.TrimSpace(v); v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s is %q: it must be the sequence number (a whole number ≥ 0) of the last event seen", from, v)
	}
	return n, nil
}
