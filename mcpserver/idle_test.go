package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
)

// connectHTTP connects a client to srv's endpoint over streamable HTTP
// at the host's protocol version, with or without the standing GET
// stream, and closes it when the test ends.
func connectHTTP(t *testing.T, srv *httptest.Server, standing bool) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	tr := &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: !standing}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, nil).Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: hostVersion})
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// sessions is how many sessions s has.
func sessions(s *Server) int {
	n := 0
	for range s.sdk.Sessions() {
		n++
	}
	return n
}

// idleTimeout is the tests' session timeout: long enough that the
// sweeps on their own ticker (every minute) never run during a test,
// which sweeps by hand (sweepOnce) at a time past it.
const idleTimeout = time.Hour

// An HTTP session whose host left without a DELETE — no request in
// flight, no standing stream — is closed once it has stood idle for
// Config.SessionTimeout, and what it subscribed to is no longer watched.
func TestAnIdleHTTPSessionIsClosedAndItsSubscriptionsDropped(t *testing.T) {
	ws := openWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Workspace: ws, Env: result.Env{Store: ws}, Poll: time.Millisecond, SessionTimeout: idleTimeout})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the client closes (cleanups run last first)
	cs := connectHTTP(t, srv, false)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fileURI(ws.Dir(), "a.txt")}); err != nil {
		t.Fatalf("subscribing: %v", err)
	}
	if s.sweepOnce(time.Now().Add(idleTimeout/2), idleTimeout); sessions(s) != 1 {
		t.Fatalf("a session idle for half its timeout was closed (%d sessions)", sessions(s))
	}
	// swept until closed: the Subscribe's answer reaches the host a
	// moment before the server counts its request over, and a sweep
	// leaves a session with a request in flight
	waitFor(t, "the idle session's closing", func() bool {
		s.sweepOnce(time.Now().Add(idleTimeout+time.Second), idleTimeout)
		return sessions(s) == 0
	})
	waitFor(t, "the end of the polling of its subscription", func() bool {
		s.subs.mu.Lock()
		defer s.subs.mu.Unlock()
		return len(s.subs.by) == 0 && !s.subs.polling
	})
	if err := cs.Ping(ctx, nil); err == nil {
		t.Error("the closed session still answers a ping")
	}
}

// A host that holds its standing GET stream open is live, however long
// it sends nothing: a sweep past its timeout leaves its session, which
// answers.
func TestAnHTTPSessionWithItsStandingStreamOpenIsNotClosed(t *testing.T) {
	s := New(Config{SessionTimeout: idleTimeout})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the client closes (cleanups run last first)
	cs := connectHTTP(t, srv, true)
	waitFor(t, "the standing stream's opening", func() bool { return s.idle.open(cs.ID()) > 0 })
	s.sweepOnce(time.Now().Add(10*idleTimeout), idleTimeout)
	if sessions(s) != 1 {
		t.Fatalf("the session with its stream open was closed (%d sessions)", sessions(s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("the session with its stream open does not answer: %v", err)
	}
}

// A session a sweep is closing answers a request that comes meanwhile
// with 404, the answer to a session that is no more, rather than taking
// it and cutting it as the session closes.
func TestARequestOfASessionBeingClosedGets404(t *testing.T) {
	s := New(Config{SessionTimeout: idleTimeout})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	cs := connectHTTP(t, srv, false)
	s.idle.mu.Lock()
	s.idle.closing = map[string]bool{cs.ID(): true} // as sweepOnce marks it before its Close
	s.idle.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	err := cs.Ping(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "404") && !strings.Contains(strings.ToLower(err.Error()), "not found") {
		t.Errorf("a ping of a session being closed: %v, want it refused as not found (404)", err)
	}
	if sessions(s) != 1 {
		t.Errorf("%d sessions: the refusal must not close the session itself (the sweep does)", sessions(s))
	}
}

// A request naming a session that does not exist — an id a host made
// up, of any length — is answered 404 and its id is not kept: only the
// SDK's sessions are counted.
func TestAnUnknownSessionIDIsNotKept(t *testing.T) {
	s := New(Config{SessionTimeout: idleTimeout})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	connectHTTP(t, srv, false)
	for i := range 50 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(sessionIDHeader, fmt.Sprintf("made-up-%d-%s", i, strings.Repeat("x", 4096)))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("a request in a made-up session was answered %s, want 404", resp.Status)
		}
	}
	s.idle.mu.Lock()
	kept := len(s.idle.by)
	s.idle.mu.Unlock()
	if kept != 1 {
		t.Errorf("%d session ids are kept after 50 requests naming made-up ones and one real session, want 1", kept)
	}
}
