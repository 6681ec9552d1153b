package mcpserver

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxEvents is how many bytes of SSE events a Handler keeps, over all
// its sessions, for hosts that resume a stream (Last-Event-ID). Each
// event counts its data and eventOverhead. An answer is capped (the
// largest, a blob read of MaxBlob bytes, is some 11.2 MiB of event), so
// that one fits with room for the other sessions'.
const MaxEvents = 16 << 20

// eventOverhead is what an event costs beyond its data, counted so that
// the empty priming events of a session's many requests are bounded too.
const eventOverhead = 64

// eventStore is the sdk.EventStore of a Handler: the events of each
// session's streams, kept in memory up to MaxEvents over all sessions.
// When an event takes the store over its bound, the oldest events of
// the session that holds the most are dropped first, until it is under
// again: a session that keeps a big answer loses its own events before
// any other session loses one, so one host's big reads cannot take the
// replay of the others (the SDK's MemoryEventStore drops the first event
// of every stream of every session at once). It must not drop an event
// from the middle of a stream: a stream is dropped from its start, and a
// replay from before what was dropped is refused (sdk.ErrEventsPurged),
// never given with a gap.
type eventStore struct {
	mu       sync.Mutex
	max      int // the bound over all sessions, in bytes
	size     int // what all sessions hold now
	seq      uint64
	sessions map[string]*sessionEvents
	// visited and dropped count the work of keeping the bound: the
	// sessions and streams looked at, and the events dropped (tests
	// check the one against the other, not a time).
	visited, dropped int
}

// sessionEvents is what one session holds: its streams' events.
type sessionEvents struct {
	size    int
	streams map[string]*eventList
}

// eventList is one stream's events kept, first the index of events[0].
type eventList struct {
	first  int
	events []storedEvent
}

// storedEvent is one event's data and when it came (the store's order).
type storedEvent struct {
	seq  uint64
	data []byte
}

// newEventStore is a store bounded to max bytes over all sessions.
func newEventStore(max int) *eventStore {
	return &eventStore{max: max, sessions: map[string]*sessionEvents{}}
}

// list is the stream's list of session sid, made when new; s.mu is held.
func (s *eventStore) list(sid, stream string) (*sessionEvents, *eventList) {
	se := s.sessions[sid]
	if se == nil {
		se = &sessionEvents{streams: map[string]*eventList{}}
		s.sessions[sid] = se
	}
	l := se.streams[stream]
	if l == nil {
		l = &eventList{}
		se.streams[stream] = l
	}
	return se, l
}

// Open readies a new stream of a session.
func (s *eventStore) Open(_ context.Context, sid, stream string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list(sid, stream)
	return nil
}

// Append keeps data as the stream's next event, then drops what takes
// the store over its bound (see eventStore).
func (s *eventStore) Append(_ context.Context, sid, stream string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, l := s.list(sid, stream)
	s.seq++
	l.events = append(l.events, storedEvent{seq: s.seq, data: data})
	cost := len(data) + eventOverhead
	se.size += cost
	s.size += cost
	for s.size > s.max && s.dropOldest(s.largest()) {
	}
	return nil
}

// largest is the session holding the most; s.mu is held and the store
// holds something.
func (s *eventStore) largest() *sessionEvents {
	var big *sessionEvents
	for _, se := range s.sessions {
		s.visited++
		if big == nil || se.size > big.size {
			big = se
		}
	}
	return big
}

// dropOldest drops se's oldest event, the first of one of its streams,
// and reports whether there was one; s.mu is held.
func (s *eventStore) dropOldest(se *sessionEvents) bool {
	var oldest *eventList
	for _, l := range se.streams {
		s.visited++
		if len(l.events) > 0 && (oldest == nil || l.events[0].seq < oldest.events[0].seq) {
			oldest = l
		}
	}
	if oldest == nil {
		return false
	}
	cost := len(oldest.events[0].data) + eventOverhead
	oldest.events[0] = storedEvent{}
	oldest.events = oldest.events[1:]
	oldest.first++
	s.dropped++
	se.size -= cost
	s.size -= cost
	return true
}

// After gives the stream's events after index; an error when any of them
// was dropped, or the stream is not known.
func (s *eventStore) After(_ context.Context, sid, stream string, index int) iter.Seq2[[]byte, error] {
	s.mu.Lock()
	var data [][]byte
	var err error
	switch l := s.sessions[sid].streamOf(stream); {
	case l == nil:
		err = fmt.Errorf("replaying stream %q of session %q: no such stream kept", stream, sid)
	case index+1 < l.first:
		err = fmt.Errorf("replaying stream %q of session %q after event %d: the events from %d were dropped to keep the store within %d bytes: %w", stream, sid, index, index+1, s.max, sdk.ErrEventsPurged)
	default:
		for _, e := range l.events[min(index+1-l.first, len(l.events)):] {
			data = append(data, slices.Clone(e.data))
		}
	}
	s.mu.Unlock()
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range data {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// streamOf is se's stream, nil when se or the stream is not known.
func (se *sessionEvents) streamOf(stream string) *eventList {
	if se == nil {
		return nil
	}
	return se.streams[stream]
}

// SessionClosed drops a closed session's events.
func (s *eventStore) SessionClosed(_ context.Context, sid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.sessions[sid]; se != nil {
		s.size -= se.size
		delete(s.sessions, sid)
	}
	return nil
}
