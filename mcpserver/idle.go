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
// one is counted while it runs, and the initialize POST that makes one
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
		if id != "" {
			s.idle.begin(id)
		}
		defer func() {
			if id != "" {
				s.idle.end(id, true)
			} else if made := w.Header().Get(sessionIDHeader); made != "" {
				s.idle.end(made, false) // the initialize POST made it
			}
			s.startSweeping(timeout)
		}()
		h.ServeHTTP(w, r)
	})
}

// begin counts a request of session id in flight.
func (a *idleSessions) begin(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.by == nil {
		a.by = map[string]*activity{}
	}
	if a.by[id] == nil {
		a.by[id] = &activity{}
	}
	a.by[id].inFlight++
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
	t := time.NewTicker(min(timeout/4, time.Minute))
	defer t.Stop()
	for range t.C {
		live := map[string]*sdk.ServerSession{}
		for ss := range s.sdk.Sessions() {
			live[ss.ID()] = ss
		}
		var idle []*sdk.ServerSession
		now := time.Now()
		s.idle.mu.Lock()
		s.idle.sweeps++
		for id, e := range s.idle.by {
			switch ss := live[id]; {
			case e.inFlight > 0:
			case ss == nil:
				delete(s.idle.by, id) // closed, or never a session
			case now.Sub(e.last) >= timeout:
				idle = append(idle, ss)
				delete(s.idle.by, id)
			}
		}
		done := len(s.idle.by) == 0
		if done {
			s.idle.sweeping = false
		}
		s.idle.mu.Unlock()
		for _, ss := range idle {
			_ = ss.Close()
		}
		if done {
			return
		}
	}
}
