package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// heartbeat is how often an idle event stream gets a comment line, so
// that proxies and clients see it alive.
const heartbeat = 15 * time.Second

// beats is the heartbeat of all a server's streams: one timer, not one
// per stream. A stream waits on next's channel, closed at the next beat;
// while no stream waits, no timer runs.
type beats struct {
	every time.Duration // 0 means heartbeat
	mu    sync.Mutex
	ch    chan struct{} // closed at the next beat; nil until a stream waits
}

// next is a channel closed at the next beat, every's time after the
// beat before it (or after this call, when no stream waited since).
func (b *beats) next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
		time.AfterFunc(orDefault(b.every, heartbeat), b.beat)
	}
	return b.ch
}

// beat wakes every stream waiting for it; the next stream to wait starts
// the next one.
func (b *beats) beat() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ch)
	b.ch = nil
}

// watchBuffer bounds what one watcher copies of the log before writing
// it: events go out in writes of at most this many bytes, and one event
// larger than it is written alone from the log's own bytes. A client that
// does not read holds its watcher in a write, with no more than this.
const watchBuffer = 64 << 10

// The defaults of the Server's bounds on watchers (the event streams open
// at once) and on their writes.
const (
	// DefaultStreamWriteTimeout is how long one write of an event stream
	// may wait for its client (Server.StreamWriteTimeout).
	DefaultStreamWriteTimeout = 30 * time.Second
	// DefaultWatchersPerConversation bounds the streams of one
	// conversation (Server.WatchersPerConversation).
	DefaultWatchersPerConversation = 32
	// DefaultWatchersPerClient bounds the streams of one client address
	// (Server.WatchersPerClient).
	DefaultWatchersPerClient = 128
	// DefaultWatchers bounds the streams of the server
	// (Server.Watchers).
	DefaultWatchers = 1024
)

// watchers counts the event streams open, in all, per conversation and
// per client address, so that a client cannot open them without bound.
type watchers struct {
	mu       sync.Mutex
	all      int
	byConv   map[string]int
	byClient map[string]int
}

// enterWatcher counts a new stream of conversation conv for client, or says
// which bound it would pass; release uncounts it.
func (s *Server) enterWatcher(conv, client string) (release func(), err error) {
	ws := &s.watching
	perConv := orDefault(s.WatchersPerConversation, DefaultWatchersPerConversation)
	perClient := orDefault(s.WatchersPerClient, DefaultWatchersPerClient)
	all := orDefault(s.Watchers, DefaultWatchers)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byConv == nil {
		ws.byConv, ws.byClient = map[string]int{}, map[string]int{}
	}
	switch {
	case ws.byConv[conv] >= perConv:
		return nil, fmt.Errorf("conversation %s has %d event streams open already, as many as the server takes (Server.WatchersPerConversation); close one first", conv, perConv)
	case ws.byClient[client] >= perClient:
		return nil, fmt.Errorf("this client (%s) has %d event streams open already, as many as the server takes from one address (Server.WatchersPerClient); close one first", client, perClient)
	case ws.all >= all:
		return nil, fmt.Errorf("the server has %d event streams open, as many as it takes (Server.Watchers); try again later", all)
	}
	ws.all++
	ws.byConv[conv]++
	ws.byClient[client]++
	return sync.OnceFunc(func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		ws.all--
		if ws.byConv[conv]--; ws.byConv[conv] == 0 {
			delete(ws.byConv, conv)
		}
		if ws.byClient[client]--; ws.byClient[client] == 0 {
			delete(ws.byClient, client)
		}
	}), nil
}

// watchingConv is how many event streams of conversation conv are open.
func (s *Server) watchingConv(conv string) int {
	s.watching.mu.Lock()
	defer s.watching.mu.Unlock()
	return s.watching.byConv[conv]
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// clientOf is the address a request came from, without its port: what
// the bound on a client's streams counts by. Behind a proxy every client
// is the proxy's.
func clientOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := s.found(w, r, id); !ok {
		return
	}
	release, err := s.enterWatcher(id, clientOf(r))
	if err != nil {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, err.Error())
		return
	}
	defer release()
	s.streamEvents(w, r, id)
}

// streamEvents writes the log's events of conversation conv after the
// request's Last-Event-ID (or its ?after= query) to w as server-sent
// events until the client goes away or the server closes. A resume from
// further back than the log keeps gets one `events.lost` event first,
// saying how many were lost and that the stored messages (GET
// .../messages) hold what they recorded.
//
// Its memory is bounded whatever the client does: it copies at most
// watchBuffer bytes of the log before writing them, holds none of the
// log's page while a write waits, and a write that waits longer than
// StreamWriteTimeout ends the stream (the connection is closed). Such a
// client reconnects with the Last-Event-ID of the last event it read
// whole and gets what follows, or events.lost when the log no longer
// keeps it.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, conv string) {
	after, err := resumePoint(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := w.(http.Flusher); !ok {
		writeError(w, http.StatusInternalServerError, "this connection cannot stream events")
		return
	}
	st := &eventStream{w: w, rc: http.NewResponseController(w), timeout: orDefault(s.StreamWriteTimeout, DefaultStreamWriteTimeout), conv: conv, after: after}
	if st.open() != nil {
		return
	}
	ctx := r.Context()
	ending := false // the server ended the streams: one last read
	for {
		if ctx.Err() != nil {
			return
		}
		page, err := s.log.Since(ctx, conv, st.after)
		if err != nil {
			// the client reconnects with its Last-Event-ID and is given what follows
			_ = st.write([]byte(": reading the events failed: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n\n"))
			return
		}
		more := page.More
		rest, err := st.send(&page)
		if err != nil {
			return
		}
		if rest {
			continue // the rest of the page, read again from after
		}
		if ending {
			return // the events emitted before the end are sent
		}
		select {
		case <-ctx.Done():
			return
		case <-s.ended:
			// The server stops, its turns' last events emitted: they may
			// have come with the end (more and ended both ready, and
			// select took this), so they are read once more and sent
			// before the stream ends. The client resumes elsewhere or
			// later.
			ending = true
		case <-more:
		case <-s.beats.next():
			if st.write([]byte(": alive\n\n")) != nil {
				return
			}
		}
	}
}

// eventStream is one client's stream of a conversation's events: the
// last event it was sent, and the writes that reach it.
type eventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration // what one write may take
	conv    string
	after   int64  // the seq of the last event sent, or resumed from
	buf     []byte // events copied from the log, written together: only while send runs (copyBuffers')
}

// copyBuffers are the buffers streams copy events into, each held only
// while one page is sent: ten thousand idle streams hold none. A buffer
// is at most watchBuffer and one event of at most watchBuffer.
var copyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// open sends the stream's headers.
func (st *eventStream) open() error {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	st.w.WriteHeader(http.StatusOK)
	return st.write()
}

// write writes ps and flushes them, within the stream's timeout.
func (st *eventStream) write(ps ...[]byte) error {
	if err := st.rc.SetWriteDeadline(time.Now().Add(st.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	for _, p := range ps {
		if _, err := st.w.Write(p); err != nil {
			return err
		}
	}
	return st.rc.Flush()
}

// send writes what page holds: an events.lost first when events after
// st.after are gone, then its events, copying at most watchBuffer bytes of
// them before a write. It clears *page, and holds none of it while a
// write waits. rest says the buffer filled before the page's end: the
// rest is read again from st.after.
func (st *eventStream) send(page *EventPage) (rest bool, err error) {
	evs := page.Events
	held := copyBuffers.Get().(*[]byte)
	defer func() {
		// back for the next page of any stream: a stream that waits
		// holds no buffer
		*held = st.buf[:0]
		st.buf = nil
		copyBuffers.Put(held)
	}()
	st.buf = st.noteLost((*held)[:0], *page)
	*page = EventPage{}
	for len(evs) > 0 && len(st.buf) < watchBuffer {
		ev := evs[0]
		if len(ev.Data) > watchBuffer {
			// alone, from the log's own bytes: no copy of it is made
			if len(st.buf) > 0 {
				if err := st.write(st.buf); err != nil {
					return false, err
				}
			}
			st.buf = st.buf[:0]
			if err := st.write(eventHead(ev), ev.Data, []byte("\n\n")); err != nil {
				return false, err
			}
		} else {
			st.buf = appendEvent(st.buf, ev)
		}
		st.after = ev.Seq
		evs = evs[1:]
	}
	rest = len(evs) > 0
	evs = nil // no more of the page is held while the write waits
	if len(st.buf) > 0 {
		if err := st.write(st.buf); err != nil {
			return false, err
		}
	}
	return rest, nil
}

// noteLost appends to buf the events.lost that page calls for, if any
// (the process started again since st.after, or the log no longer keeps
// what followed it), and moves st.after to the event before page's first.
func (st *eventStream) noteLost(buf []byte, page EventPage) []byte {
	evs, after, conv := page.Events, st.after, st.conv
	switch {
	case page.Restarted:
		// the events.lost's id is the one before the first event sent,
		// so that the watcher resumes from here if it comes back
		last := page.Gone
		if len(evs) > 0 {
			last = evs[0].Seq - 1
		}
		buf = appendLost(buf, last, lostEvent{Lost: page.Gone, Restarted: true, Message: fmt.Sprintf("event %d is not one of this server process (it started again since, and its ids began again at 1): what came after it is lost, and the events of this process follow from %d; the stored messages (GET /v1/conversations/%s/messages) hold what they recorded", after, last+1, conv)})
		st.after = last
	case page.Gone > 0:
		last := after + page.Gone
		if len(evs) > 0 {
			last = evs[0].Seq - 1
		}
		why := fmt.Sprintf("the server keeps the last %d of a conversation", page.Kept)
		if page.Evicted {
			why = "the server dropped this conversation's events: it had been idle the longest, or for long, and the server bounds the memory its events take"
		}
		buf = appendLost(buf, last, lostEvent{Lost: page.Gone, Message: fmt.Sprintf("%d events after %d are no longer kept (%s); the stored messages (GET /v1/conversations/%s/messages) hold what they recorded", page.Gone, after, why, conv)})
		st.after = last
	}
	return buf
}

// eventHead is ev's lines in the text/event-stream format up to "data: ",
// which its data and a blank line follow.
func eventHead(ev Event) []byte {
	b := append([]byte("id: "), strconv.FormatInt(ev.Seq, 10)...)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Type...)
	return append(b, "\ndata: "...)
}
