package server

import (
	"context"
	"encoding/json"
	"sync"
)

// EventLog keeps conversations' events for their watchers: turns append,
// any number of watchers read from any sequence number at their own pace.
// Sequence numbers are per conversation, from 1, in the order of the
// appends. The server's own (the zero Server.Events) keeps them in memory
// for the life of the process; one shared by several processes (package
// worker's, in Postgres) lets a watcher of any of them follow a turn run
// by another. An implementation must not make an append wait for a
// watcher, nor keep events without bound.
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
}

// memoryEvents is the EventLog of a server alone: one eventLog per
// conversation, in memory, since the process started.
type memoryEvents struct {
	keep int
	mu   sync.Mutex
	logs map[string]*eventLog
}

func newMemoryEvents(keep int) *memoryEvents {
	return &memoryEvents{keep: keep, logs: map[string]*eventLog{}}
}

// log is conversation conv's log, made on first use.
func (m *memoryEvents) log(conv string) *eventLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logs[conv]
	if l == nil {
		l = newEventLog(m.keep)
		m.logs[conv] = l
	}
	return l
}

func (m *memoryEvents) Append(_ context.Context, conv, typ string, data json.RawMessage) error {
	m.log(conv).add(typ, data)
	return nil
}

func (m *memoryEvents) Since(_ context.Context, conv string, seq int64) (EventPage, error) {
	l := m.log(conv)
	evs, more, gone, restarted := l.since(seq)
	return EventPage{Events: evs, More: more, Gone: gone, Restarted: restarted, Kept: l.keep}, nil
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
