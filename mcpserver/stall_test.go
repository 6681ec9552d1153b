package mcpserver

import (
	"context"
	"fmt"
	"io"
	"net"
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

// testStall is the tests' Config.WriteStall.
const testStall = 300 * time.Millisecond

// smallBuffers is a listener whose connections have small send buffers,
// so that a host that does not read fills them with a few notifications.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// stallServer is an HTTP server of s whose connections have small send
// buffers.
func stallServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// post posts an MCP message to srv in session sid ("" for none), and
// returns the session the answer names and its body.
func post(t *testing.T, srv *httptest.Server, sid, body string) (string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", hostVersion)
	if sid != "" {
		req.Header.Set(sessionIDHeader, sid)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("posting %.60s: %v", body, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header.Get(sessionIDHeader), string(b)
}

// updates connects a host over HTTP, with its standing GET stream, that
// subscribes to uri; the URIs it is told changed come on the channel.
func updates(t *testing.T, srv *httptest.Server, uri string) <-chan string {
	t.Helper()
	updated := make(chan string, 64)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	tr := &sdk.StreamableClientTransport{Endpoint: srv.URL}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "reader", Version: "1"}, &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
		select {
		case updated <- req.Params.URI:
		default:
		}
	}}).Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: hostVersion})
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribing to %s: %v", uri, err)
	}
	return updated
}

// One host that opens its standing GET stream and never reads it cannot
// hold back the others' resources/updated: once its socket's buffers are
// full, the write to it fails after Config.WriteStall, its stream is
// cut, and the others are told.
func TestAHostThatNeverReadsItsStreamDoesNotHoldBackOthersUpdates(t *testing.T) {
	stuckHost(t, testStall)
}

// Until its stream is cut, a host that does not read it holds only the
// updates of the URIs it subscribes to: another URI's subscribers are
// told at once (each URI's update is sent on a goroutine of its own),
// however long the write stall allowed.
func TestAHostThatNeverReadsHoldsOnlyItsOwnURIsUpdates(t *testing.T) {
	stuckHost(t, time.Hour)
}

// stuckHost is a host that subscribes to files, opens its standing GET
// stream and never reads it, while their changes fill its socket's
// buffers; and another host subscribed to b.txt, which must be told
// when it changes.
func stuckHost(t *testing.T, stall time.Duration) {
	ws := openWorkspace(t)
	const files = 20
	name := func(i int) string { return fmt.Sprintf("%03d-%s.txt", i, strings.Repeat("n", 200)) }
	for i := range files {
		if err := os.WriteFile(filepath.Join(ws.Dir(), name(i)), []byte("0"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws.Dir(), "b.txt"), []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Workspace: ws, Env: result.Env{Store: ws}, Poll: 5 * time.Millisecond, SessionTimeout: -1, WriteStall: stall})
	srv := stallServer(t, s)

	// the host that never reads its stream
	sid, _ := post(t, srv, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stuck","version":"1"}}}`)
	post(t, srv, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := range files {
		if _, body := post(t, srv, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, i+2, fileURI(ws.Dir(), name(i)))); strings.Contains(body, `"error"`) {
			t.Fatalf("the subscription was refused: %.300s", body)
		}
	}
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s: %s\r\nMcp-Protocol-Version: %s\r\n\r\n", srv.Listener.Addr(), sessionIDHeader, sid, hostVersion)
	// and never reads it

	updated := updates(t, srv, fileURI(ws.Dir(), "b.txt"))
	// the stuck host's files change until its buffers are long full (some
	// 400 notifications of 300 bytes)
	for round := range 20 {
		for i := range files {
			if err := os.WriteFile(filepath.Join(ws.Dir(), name(i)), []byte(strings.Repeat("x", round+2)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(15 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(ws.Dir(), "b.txt"), []byte("changed, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, updated, "the reading host's resources/updated of b.txt, with another host's stream unread"); !strings.HasSuffix(got, "/b.txt") {
		t.Errorf("the reading host was told %s changed, want b.txt", got)
	}
}

// A standing stream that stands idle for longer than Config.WriteStall
// is not cut: the deadline is on a write in progress, not on the stream.
func TestAStreamIdleLongerThanTheWriteStallStillGetsUpdates(t *testing.T) {
	ws := openWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "b.txt"), []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Workspace: ws, Env: result.Env{Store: ws}, Poll: 5 * time.Millisecond, SessionTimeout: -1, WriteStall: testStall})
	srv := stallServer(t, s)
	updated := updates(t, srv, fileURI(ws.Dir(), "b.txt"))
	for i := range 2 {
		time.Sleep(3 * testStall)
		if err := os.WriteFile(filepath.Join(ws.Dir(), "b.txt"), []byte(strings.Repeat("b", i+2)), 0o644); err != nil {
			t.Fatal(err)
		}
		receive(t, updated, fmt.Sprintf("resources/updated %d after the stream stood idle for %v", i+1, 3*testStall))
	}
}
