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
// largest, a blob read of MaxBlob bytes, is some 10.7 MiB of event), so
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
// a session holding less loses one. That is fair between sessions, not
// hosts: a host that opens many sessions (initialize is all one takes)
// can make another's session the one that holds the most. Within a
// session, the events of its standing stream ("", its notifications)
// are dropped only when nothing else of it is left: a plain GET
// replays that stream from its start, and is refused once any of it
// was dropped. (The SDK's MemoryEventStore drops the first event of
// every stream of every session at once.) It must not drop an event
// from the middle of a stream: a stream is dropped from its start, and
// a replay from before what was dropped is refused
// (sdk.ErrEventsPurged), never given with a gap. A stream other than
// "" whose events were all dropped is forgotten, so that a session
// keeps no more streams than it keeps events, and those of its
// requests in flight not yet answered (what a stream and its place in
// the queue below cost is not counted in the bound: an event, at
// least eventOverhead, bounds it); a replay of it is
// refused, and one appended to again after that is kept with its
// start unknown: its replays are refused too.
//
// Dropping an event costs a few steps, however many streams a session
// opened: each session keeps the order of its events as a queue of the
// streams they went to.
type eventStore struct {
	mu       sync.Mutex
	max      int // the bound over all sessions, in bytes
	size     int // what all sessions hold now
	sessions map[string]*sessionEvents
	// visited and dropped count the work of keeping the bound: the
	// sessions and streams looked at, and the events dropped (tests
	// check the one against the other, not a time).
	visited, dropped int
}

// sessionEvents is what one session holds: its streams' events, and
// the streams other than "" its kept events went to, oldest first (one
// entry an event).
type sessionEvents struct {
	size    int
	streams map[string]*eventList
	order   []*eventList
	head    int // order[head:] are the entries still kept
}

// eventList is one stream's events kept, first the index of events[0];
// unknown when the stream was forgotten and appended to again, so that
// the indexes of its events are not known.
type eventList struct {
	id      string
	first   int
	unknown bool
	events  [][]byte
}

// newEventStore is a store bounded to max bytes over all sessions.
func newEventStore(max int) *eventStore {
	return &eventStore{max: max, sessions: map[string]*sessionEvents{}}
}

// list is the stream's list of session sid, made when new (its start
// unknown unless opened, or the standing stream); s.mu is held.
func (s *eventStore) list(sid, stream string, opened bool) (*sessionEvents, *eventList) {
	se := s.sessions[sid]
	if se == nil {
		se = &sessionEvents{streams: map[string]*eventList{}}
		s.sessions[sid] = se
	}
	l := se.streams[stream]
	if l == nil {
		l = &eventList{id: stream, unknown: !opened && stream != ""}
		se.streams[stream] = l
	}
	return se, l
}

// Open readies a new stream of a session.
func (s *eventStore) Open(_ context.Context, sid, stream string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list(sid, stream, true)
	return nil
}

// Append keeps data as the stream's next event, then drops what takes
// the store over its bound (see eventStore). The data is kept as it is,
// not copied: the SDK does not change it after.
func (s *eventStore) Append(_ context.Context, sid, stream string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, l := s.list(sid, stream, false)
	l.events = append(l.events, data)
	if stream != "" {
		se.order = append(se.order, l)
	}
	cost := len(data) + eventOverhead
	se.size += cost
	s.size += cost
	s.evict()
	return nil
}

// evict drops events until the store is within its bound: from the
// session that holds the most, down to what the next holds, then again;
// s.mu is held.
func (s *eventStore) evict() {
	for s.size > s.max {
		var big, next *sessionEvents
		for _, se := range s.sessions {
			s.visited++
			switch {
			case big == nil || se.size > big.size:
				big, next = se, big
			case next == nil || se.size > next.size:
				next = se
			}
		}
		floor := 0
		if next != nil {
			floor = next.size
		}
		for s.size > s.max && big.size >= floor && s.dropOldest(big) {
		}
		if big.size >= floor { // nothing left to drop of it
			return
		}
	}
}

// dropOldest drops se's oldest event of a stream other than "", else the
// first of its standing stream, and reports whether there was one; a
// stream other than "" left empty is forgotten. s.mu is held.
func (s *eventStore) dropOldest(se *sessionEvents) bool {
	s.visited++
	l := se.streams[""]
	if se.head < len(se.order) {
		l = se.order[se.head]
		se.order[se.head] = nil
		if se.head++; se.head > 64 && se.head*2 > len(se.order) {
			se.order, se.head = slices.Clone(se.order[se.head:]), 0
		}
	}
	if l == nil || len(l.events) == 0 {
		return false
	}
	cost := len(l.events[0]) + eventOverhead
	l.events[0] = nil
	l.events = l.events[1:]
	l.first++
	se.size -= cost
	s.size -= cost
	s.dropped++
	if len(l.events) == 0 && l.id != "" {
		delete(se.streams, l.id)
	}
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
	case l.unknown:
		err = fmt.Errorf("replaying stream %q of session %q after event %d: its first events were dropped to keep the store within %d bytes, and where its events kept start is not known: %w", stream, sid, index, s.max, sdk.ErrEventsPurged)
	case index+1 < l.first:
		err = fmt.Errorf("replaying stream %q of session %q after event %d: the events from %d were dropped to keep the store within %d bytes: %w", stream, sid, index, index+1, s.max, sdk.ErrEventsPurged)
	default:
		// the slice headers copied, not the bytes: an event's data is
		// never changed, and a dropped one is only let go
		data = slices.Clone(l.events[min(index+1-l.first, len(l.events)):])
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
