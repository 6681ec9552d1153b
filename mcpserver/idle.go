package mcpserver

import (
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Handler's session is closed once it has stood idle for
// Config.SessionTimeout: a host that leaves without a DELETE (its
// process killed, its machine asleep) would otherwise keep its session,
// and the polling of what it subscribed to, for as long as the server
// runs. Idle means no request of the session's in flight — a POST being
// answered, or a GET stream standing open — since the last one ended.
// The SDK's own StreamableHTTPOptions.SessionTimeout is not used: it
// counts POSTs only (v1.8.0, sessionInfo.startPOST), so a host that only
// listens on its standing GET stream, which is how a host waits for
// list_changed and resources/updated, would be cut while it listens.
//
// The sessions are known by their Mcp-Session-Id: a request that names
// one the SDK has (an id no session has is not kept) is counted while it
// runs, and the initialize POST that makes one
// marks it when it ends. A sweep, every quarter of the timeout (at most
// a minute), closes the sessions idle for the timeout; a closed session
// drops its subscriptions at the next poll (subscribe.go). Sweeping
// stops while no session is known.

// sessionIDHeader is the header that names a streamable HTTP session.
const sessionIDHeader = "Mcp-Session-Id"

// idleSessions is what a Handler knows of its sessions' activity.
type idleSessions struct {
	mu       sync.Mutex
	by       map[string]*activity // session ID → its activity
	closing  map[string]bool      // sessions a sweep is closing: their requests get 404
	sweeping bool
	sweeps   int // how many sweeps ran (tests wait on it)
}

// activity is a session's: its requests in flight, and when the last
// one ended.
type activity struct {
	inFlight int
	last     time.Time
}

// keepAlive wraps h, the SDK's handler, so that s closes the sessions
// idle for timeout.
func (s *Server) keepAlive(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionIDHeader)
		counted := false
		if id != "" {
			var closing bool
			if counted, closing = s.idle.begin(id, s.hasSession); closing {
				// a sweep is closing it: the answer to a session that is no
				// more, which the host takes as its cue to initialize again
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		}
		defer func() {
			if counted {
				s.idle.end(id, true)
			} else if made := w.Header().Get(sessionIDHeader); id == "" && made != "" {
				s.idle.end(made, false) // the initialize POST made it
			}
			s.startSweeping(timeout)
		}()
		h.ServeHTTP(w, r)
	})
}

// hasSession reports whether the SDK has a session of id.
func (s *Server) hasSession(id string) bool {
	for ss := range s.sdk.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// begin counts a request of session id in flight and reports counted;
// it counts nothing, reporting closing, when a sweep is closing the
// session, and nothing when the id names no session, neither known here
// nor to exists (the SDK's): an id a host made up, of any length, is
// never kept — the SDK answers its request 404.
func (a *idleSessions) begin(id string, exists func(string) bool) (counted, closing bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing[id] {
		return false, true
	}
	if a.by[id] == nil {
		if !exists(id) {
			return false, false
		}
		if a.by == nil {
			a.by = map[string]*activity{}
		}
		a.by[id] = &activity{}
	}
	a.by[id].inFlight++
	return true, false
}

// end marks the end of a request of session id, one begin counted when
// counted says so.
func (a *idleSessions) end(id string, counted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.by == nil {
		a.by = map[string]*activity{}
	}
	e := a.by[id]
	if e == nil {
		e = &activity{}
		a.by[id] = e
	}
	if counted {
		e.inFlight--
	}
	e.last = time.Now()
}

// open is how many requests of session id are in flight.
func (a *idleSessions) open(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.by[id]; e != nil {
		return e.inFlight
	}
	return 0
}

// sweepCount is how many sweeps ran.
func (a *idleSessions) sweepCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sweeps
}

// startSweeping starts the sweeps, unless they run.
func (s *Server) startSweeping(timeout time.Duration) {
	s.idle.mu.Lock()
	defer s.idle.mu.Unlock()
	if s.idle.sweeping || len(s.idle.by) == 0 {
		return
	}
	s.idle.sweeping = true
	go s.sweep(timeout)
}

// sweep closes, every tick, the sessions idle for timeout, and returns
// when no session is known.
func (s *Server) sweep(timeout time.Duration) {
	t := time.NewTicker(max(min(timeout/4, time.Minute), time.Millisecond))
	defer t.Stop()
	for range t.C {
		if !s.sweepOnce(time.Now(), timeout) {
			return
		}
	}
}

// sweepOnce closes the sessions idle for timeout at now, and reports
// whether any session is still known (when none is, sweeping stops).
// The SDK's sessions are listed under the lock, so that a session made
// since is never taken for a closed one; the sessions it closes answer
// 404 until they are closed (begin), never a request cut half way.
func (s *Server) sweepOnce(now time.Time, timeout time.Duration) bool {
	s.idle.mu.Lock()
	live := map[string]*sdk.ServerSession{}
	for ss := range s.sdk.Sessions() {
		live[ss.ID()] = ss
	}
	var idle []*sdk.ServerSession
	s.idle.sweeps++
	for id, e := range s.idle.by {
		switch ss := live[id]; {
		case e.inFlight > 0:
		case ss == nil:
			delete(s.idle.by, id) // closed, or never a session
		case now.Sub(e.last) >= timeout:
			idle = append(idle, ss)
			delete(s.idle.by, id)
			if s.idle.closing == nil {
				s.idle.closing = map[string]bool{}
			}
			s.idle.closing[id] = true
		}
	}
	known := len(s.idle.by) > 0
	if !known {
		s.idle.sweeping = false
	}
	s.idle.mu.Unlock()
	for _, ss := range idle {
		_ = ss.Close()
		s.idle.mu.Lock()
		delete(s.idle.closing, ss.ID())
		s.idle.mu.Unlock()
	}
	return known
}
