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

// eventBytesKept bounds the memory of the events one conversation keeps
// (their data and eventOverhead each); older events are dropped first
// past it too (a long answer streams many deltas).
const eventBytesKept = 64 << 20

// eventOverhead is what an event kept costs beside its data: its Event,
// counted with the data so that many small deltas are bounded too.
const eventOverhead = 80

// eventLog is one conversation's events since the server started: its
// turns append, any number of watchers read from any sequence number at
// their own pace. An append never waits for a watcher, so a slow client
// cannot hold a turn: it only falls behind, and past what the log keeps,
// it is told what it missed (since's gone).
type eventLog struct {
	mu       sync.Mutex
	events   []Event // events[i].Seq == first+i
	first    int64   // the Seq of events[0]; sequence numbers start at 1
	next     int64   // the Seq the next append gets
	keep     int     // the most events kept; 0 means DefaultEventsKept
	maxBytes int     // the most bytes kept (sizeOf); eventBytesKept unless the whole server's bound is less
	bytes    int     // the bytes of the events kept (sizeOf)
	last     time.Time
	// evictedTo is the last Seq dropped by evict: a watcher who lost
	// events up to it lost them to the conversation's idling, not to its
	// own pace.
	evictedTo int64
	changed   chan struct{}
}

func newEventLog(keep int) *eventLog {
	if keep <= 0 {
		keep = DefaultEventsKept
	}
	return &eventLog{first: 1, next: 1, keep: keep, maxBytes: eventBytesKept, changed: make(chan struct{})}
}

// append adds an event of type typ whose data is v encoded as JSON, and
// wakes every watcher. It fails only when v does not encode.
func (l *eventLog) append(typ string, v any) (Event, error) {
	data, err := result.JSON(v) // texts as themselves: no HTML escaping
	if err != nil {
		return Event{}, fmt.Errorf("encoding a %s event: %w", typ, err)
	}
	ev, _ := l.add(typ, data)
	return ev, nil
}

// add adds an event of type typ whose data is JSON already, and wakes
// every watcher. grew is how many bytes (sizeOf) the log holds more than
// before: less than the event's, or below 0, when older events went.
func (l *eventLog) add(typ string, data json.RawMessage) (ev Event, grew int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	before := l.bytes
	ev = Event{Seq: l.next, Type: typ, Data: data, at: time.Now()}
	l.next++
	l.last = ev.at
	l.events = append(l.events, ev)
	l.bytes += len(data) + eventOverhead
	if over := len(l.events) - l.keep; over > 0 || l.bytes > l.maxBytes {
		// drop in bulk, so that appends stay O(1) amortised
		drop := 0
		if over > 0 {
			drop = max(over, l.keep/4)
		}
		freed := sizeOf(l.events[:drop])
		for drop < len(l.events)-1 && l.bytes-freed > l.maxBytes*3/4 {
			freed += len(l.events[drop].Data) + eventOverhead
			drop++
		}
		drop = min(drop, len(l.events)-1)
		l.bytes -= sizeOf(l.events[:drop]) // freed, unless min cut it
		l.events = append(l.events[:0:0], l.events[drop:]...)
		l.first += int64(drop)
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return ev, l.bytes - before
}

// sizeOf is the bytes evs take in a log: their data and eventOverhead
// each.
func sizeOf(evs []Event) int {
	n := 0
	for _, e := range evs {
		n += len(e.Data) + eventOverhead
	}
	return n
}

// evict drops every event, keeping the sequence numbers going, wakes the
// watchers (who are told what they lost), and returns the bytes freed.
func (l *eventLog) evict() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	freed := l.bytes
	l.events, l.bytes = nil, 0
	l.first = l.next
	l.evictedTo = l.next - 1
	close(l.changed)
	l.changed = make(chan struct{})
	return freed
}

// lastAppend is when the last event was appended, and the bytes the log
// holds.
func (l *eventLog) lastAppend() (time.Time, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.bytes
}

// since returns the events after seq, a channel closed at the next append
// (wait on it, then call since again), and gone: how many events after
// seq the log no longer holds (a watcher that fell too far behind; or,
// evicted, one of a conversation whose events were all dropped).
//
// A seq this log never gave (restarted) is from a server process before
// this one, whose ids began again at 1: the log cannot tell which of its
// own events such a watcher saw, so it returns every event it keeps, and
// gone is how many of its own it no longer keeps.
func (l *eventLog) since(seq int64) (evs []Event, more <-chan struct{}, gone int64, restarted, evicted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq >= l.next {
		return l.events[:len(l.events):len(l.events)], l.changed, l.first - 1, true, l.evictedTo > 0
	}
	from := seq + 1
	if from < l.first {
		gone = l.first - from
		evicted = from <= l.evictedTo
		from = l.first
	}
	evs = l.events[from-l.first:]
	return evs[:len(evs):len(evs)], l.changed, gone, false, evicted
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

// appendLost is an events.lost event whose id is last.
func appendLost(buf []byte, last int64, lost lostEvent) []byte {
	data, _ := result.JSON(lost) // strings and numbers: it encodes
	return appendEvent(buf, Event{Seq: last, Type: EventLost, Data: data})
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
