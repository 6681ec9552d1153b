package mcpserver

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// An HTTP session whose host left without a DELETE — no request in
// flight, no standing stream — is closed once it has stood idle for
// Config.SessionTimeout, and what it subscribed to is no longer watched.
func TestAnIdleHTTPSessionIsClosedAndItsSubscriptionsDropped(t *testing.T) {
	ws := openWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Workspace: ws, Env: result.Env{Store: ws}, Poll: time.Millisecond, SessionTimeout: 20 * time.Millisecond})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the client closes (cleanups run last first)
	cs := connectHTTP(t, srv, false)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fileURI(ws.Dir(), "a.txt")}); err != nil {
		t.Fatalf("subscribing: %v", err)
	}
	waitFor(t, "the idle session's closing", func() bool { return sessions(s) == 0 })
	waitFor(t, "the end of the polling of its subscription", func() bool {
		s.subs.mu.Lock()
		defer s.subs.mu.Unlock()
		return len(s.subs.by) == 0 && !s.subs.polling
	})
}

// A host that holds its standing GET stream open is live, however long
// it sends nothing: its session outlasts many timeouts and answers.
func TestAnHTTPSessionWithItsStandingStreamOpenIsNotClosed(t *testing.T) {
	s := New(Config{SessionTimeout: 20 * time.Millisecond})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the client closes (cleanups run last first)
	cs := connectHTTP(t, srv, true)
	waitFor(t, "the standing stream's opening", func() bool { return s.idle.open(cs.ID()) > 0 })
	// sweeps over ten timeouts (each follows the last by a quarter of
	// it), or the session's end, which ends them
	start := s.idle.sweepCount()
	waitFor(t, "ten timeouts of sweeps", func() bool { return s.idle.sweepCount() >= start+40 || sessions(s) == 0 })
	if sessions(s) != 1 {
		t.Fatalf("the session with its stream open was closed (%d sessions)", sessions(s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("the session with its stream open does not answer: %v", err)
	}
}
