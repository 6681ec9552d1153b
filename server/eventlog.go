package server

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// EventLog keeps conversations' events for their watchers: turns append,
// any number of watchers read from any sequence number at their own pace.
// Sequence numbers are per conversation, from 1, in the order of the
// appends. The server's own (the zero Server.Events) keeps them in memory
// for the life of the process; one shared by several processes (package
// worker's, in Postgres) lets a watcher of any of them follow a turn run
// by another. An implementation must not make an append wait for a
// watcher, nor keep events without bound. The server appends no event
// whose data is over MaxEventBytes.
type EventLog interface {
	// Append adds an event of type typ whose data is one line of JSON to
	// conversation conv's events. It may return before the event can be
	// read (a log that batches text deltas), but events are read in the
	// order they were appended.
	Append(ctx context.Context, conv, typ string, data json.RawMessage) error
	// Since reads conversation conv's events after seq.
	Since(ctx context.Context, conv string, seq int64) (EventPage, error)
	// Last is the sequence number of conversation conv's newest event, 0
	// when it has none.
	Last(ctx context.Context, conv string) (int64, error)
}

// EventPage is what EventLog.Since read.
type EventPage struct {
	// Events are the events after the sequence number asked for, in
	// order; maybe not all of them (read again after the last).
	Events []Event
	// More is closed once events after these may have come: wait on it,
	// then read again.
	More <-chan struct{}
	// Gone is how many events after the sequence number asked for the
	// log no longer keeps (a watcher that fell too far behind).
	Gone int64
	// Restarted says the sequence number asked for was never given by
	// this log (a server process before this one gave it): Events are
	// then every event kept, and Gone how many of its own it no longer
	// keeps.
	Restarted bool
	// Kept is how many events of a conversation the log keeps, for the
	// message telling a watcher what it lost.
	Kept int
	// Evicted says the events Gone were dropped with all the others the
	// conversation had (it was idle, and the log bounds its memory or
	// the time it keeps events), not because the watcher fell behind.
	Evicted bool
}

// DefaultEventBytes bounds the memory of the events a server keeps of
// all its conversations together (Server.EventBytes): past it, the
// events of the conversations idle longest are dropped whole.
const DefaultEventBytes = 256 << 20

// DefaultEventsIdle is how long a server keeps a conversation's events
// after its last one (Server.EventsIdle).
const DefaultEventsIdle = time.Hour

// memoryEvents is the EventLog of a server alone: one eventLog per
// conversation, in memory, since the process started. Its memory is
// bounded in all (maxBytes): past it the logs of the conversations whose
// last event is oldest are dropped, and so is a log idle for idle. A
// dropped log keeps its next sequence number (a few words), so that ids
// go on and a watcher resuming it is told what it lost.
type memoryEvents struct {
	keep     int   // events per conversation
	maxBytes int64 // the memory of all the conversations' events
	idle     time.Duration

	mu    sync.Mutex
	logs  map[string]*eventLog
	bytes int64       // the sum of the logs' bytes, as their appends reported it
	timer *time.Timer // the next sweep of idle logs, nil when none is due
	// closed: the server was closed, and the logs are swept no more
	closed bool
}

// close stops the sweeps of idle logs: a closed server's log is not
// reached from the runtime's timers, and kept no longer than its server.
func (m *memoryEvents) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
}

// newMemoryEvents is a log keeping keep events of each conversation
// (0: DefaultEventsKept), maxBytes of events in all (0:
// DefaultEventBytes), each for idle after its conversation's last (0:
// DefaultEventsIdle).
func newMemoryEvents(keep int, maxBytes int64, idle time.Duration) *memoryEvents {
	if maxBytes <= 0 {
		maxBytes = DefaultEventBytes
	}
	if idle <= 0 {
		idle = DefaultEventsIdle
	}
	return &memoryEvents{keep: keep, maxBytes: maxBytes, idle: idle, logs: map[string]*eventLog{}}
}

// log is conversation conv's log, made on first use.
func (m *memoryEvents) log(conv string) *eventLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logs[conv]
	if l == nil {
		l = newEventLog(m.keep)
		l.maxBytes = min(l.maxBytes, int(m.maxBytes))
		m.logs[conv] = l
	}
	return l
}

func (m *memoryEvents) Append(_ context.Context, conv, typ string, data json.RawMessage) error {
	l := m.log(conv)
	_, grew := l.add(typ, data)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bytes += int64(grew)
	if m.bytes > m.maxBytes {
		m.evictIdlest(l)
	}
	if m.timer == nil && !m.closed {
		m.timer = time.AfterFunc(m.idle/2, func() { m.sweep(time.Now()) })
	}
	return nil
}

// evictIdlest drops the logs whose last event is oldest, never keep's
// (the one just appended to), until the logs hold at most 3/4 of
// maxBytes: in bulk, so that evictions stay rare. Called with m.mu held.
func (m *memoryEvents) evictIdlest(keep *eventLog) {
	type held struct {
		l    *eventLog
		last time.Time
	}
	var all []held
	for _, l := range m.logs {
		if l == keep {
			continue
		}
		if last, bytes := l.lastAppend(); bytes > 0 {
			all = append(all, held{l, last})
		}
	}
	slices.SortFunc(all, func(a, b held) int { return a.last.Compare(b.last) })
	for _, h := range all {
		if m.bytes <= m.maxBytes*3/4 {
			return
		}
		m.bytes -= int64(h.l.evict())
	}
}

// sweep drops the logs idle since before now-idle, and sets the next
// sweep while any log holds events.
func (m *memoryEvents) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.logs {
		if last, bytes := l.lastAppend(); bytes > 0 && now.Sub(last) >= m.idle {
			m.bytes -= int64(l.evict())
		}
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if m.bytes > 0 && !m.closed {
		m.timer = time.AfterFunc(m.idle/2, func() { m.sweep(time.Now()) })
	}
}

func (m *memoryEvents) Since(_ context.Context, conv string, seq int64) (EventPage, error) {
	l := m.log(conv)
	evs, more, gone, restarted, evicted := l.since(seq)
	return EventPage{Events: evs, More: more, Gone: gone, Restarted: restarted, Kept: l.keep, Evicted: evicted}, nil
}

func (m *memoryEvents) Last(_ context.Context, conv string) (int64, error) {
	m.mu.Lock()
	l := m.logs[conv]
	m.mu.Unlock()
	if l == nil {
		return 0, nil
	}
	return l.lastSeq(), nil
}
