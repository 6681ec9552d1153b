package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
)

// hostOver is a host speaking raw streamable HTTP to srv: initialized,
// its session's id returned.
func hostOver(t *testing.T, srv *httptest.Server, name string) string {
	t.Helper()
	sid, _ := post(t, srv, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":%q,"version":"1"}}}`, hostVersion, name))
	if sid == "" {
		t.Fatalf("%s got no session", name)
	}
	post(t, srv, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// replay asks srv for the events of session sid's stream after the
// event lastID (GET with Last-Event-ID), and returns what came.
func replay(t *testing.T, srv *httptest.Server, sid, lastID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", hostVersion)
	req.Header.Set(sessionIDHeader, sid)
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("replaying after %s: %v", lastID, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// eventID is the id of an SSE stream's first event (its priming event).
var eventID = regexp.MustCompile(`(?m)^id: (\S+)`)

// One host's big answer — an 8 MiB blob read, some 10.7 MiB of SSE event —
// does not evict the events another host keeps for a replay: a host
// whose stream broke gets its call's answer again by Last-Event-ID
// after another host read a big file. (Before, the sessions shared one
// 10 MiB store that evicts from every stream at once: the blob's event
// took every other host's events with it.)
func TestOneHostsBigAnswerDoesNotEvictAnotherHostsReplay(t *testing.T) {
	ws := openWorkspace(t)
	blob := bytes.Repeat([]byte{0, 1, 2, 3}, MaxBlob/4)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "big.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Workspace: ws, Env: result.Env{Store: ws}, SessionTimeout: -1,
		Tools: registry(t, rawTool("test--small", result.Result{Data: "the small answer"}))})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	small := hostOver(t, srv, "small")
	_, body := post(t, srv, small, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test--small","arguments":{}}}`)
	m := eventID.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, "the small answer") {
		t.Fatalf("the call's stream has no priming event or no answer: %.300s", body)
	}
	big := hostOver(t, srv, "big")
	for i := range 2 { // the store of before evicted when the next event came
		_, body := post(t, srv, big, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%q}}`, 2+i, fileURI(ws.Dir(), "big.bin")))
		if len(body) < MaxBlob {
			t.Fatalf("the blob read gave %.300s", body)
		}
		t.Logf("the blob read's stream: %d bytes", len(body))
	}
	post(t, srv, big, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if got := replay(t, srv, small, m[1]); !strings.Contains(got, "the small answer") {
		t.Errorf("the small host's replay after another host's blob reads gave %.300s, want its answer again", got)
	}
}

// appendAll appends events to st: each "session/stream/bytes".
func appendAll(t *testing.T, st *eventStore, events ...string) {
	t.Helper()
	for _, e := range events {
		var sid, stream string
		var n int
		if _, err := fmt.Sscanf(strings.ReplaceAll(e, "/", " "), "%s %s %d", &sid, &stream, &n); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		st.Open(context.Background(), sid, stream) // as the SDK opens each stream first
		if err := st.Append(context.Background(), sid, stream, bytes.Repeat([]byte{'x'}, n)); err != nil {
			t.Fatal(err)
		}
	}
}

// kept is what a replay of sid's stream after index gives: the sizes of
// its events, "purged" when some were dropped, "gone" when the stream
// is not kept (or was forgotten).
func kept(st *eventStore, sid, stream string, index int) string {
	var sizes []string
	for d, err := range st.After(context.Background(), sid, stream, index) {
		if err != nil {
			if errors.Is(err, sdk.ErrEventsPurged) {
				return "purged"
			}
			return "gone"
		}
		sizes = append(sizes, fmt.Sprint(len(d)))
	}
	return strings.Join(sizes, " ")
}

// The event store keeps within its bound by dropping the oldest events
// of the session that holds the most, from the start of a stream: the
// other sessions keep theirs, and a replay from before what was dropped
// is refused (sdk.ErrEventsPurged), never given with a gap.
func TestTheEventStoreDropsTheLargestSessionsOldestEventsFirst(t *testing.T) {
	const max = 1000
	for _, c := range []struct {
		name   string
		events []string
		replay [][3]string // session, stream, index → want
		want   []string
	}{
		{"under the bound everything is kept",
			[]string{"a/s/100", "b/s/100", "a/s/100"},
			[][3]string{{"a", "s", "-1"}, {"b", "s", "-1"}}, []string{"100 100", "100"}},
		{"a big event drops its own session's events, not another's",
			[]string{"a/s/10", "a/s/10", "b/s/100", "b/s/500", "b/t/300"},
			// a 148, b 100+500+300 (and 64 an event): b's 100, then its 500
			// and b's s, emptied, is forgotten
			[][3]string{{"a", "s", "-1"}, {"b", "s", "0"}, {"b", "t", "-1"}}, []string{"10 10", "gone", "300"}},
		{"an event over the bound alone is dropped, and no other",
			[]string{"a/s/10", "b/s/0", "b/s/5000"},
			[][3]string{{"a", "s", "-1"}, {"b", "s", "0"}}, []string{"10", "gone"}},
		{"two big sessions are evicted down to even shares",
			[]string{"a/s/300", "a/s/300", "b/s/300", "b/s/300"},
			[][3]string{{"a", "s", "0"}, {"b", "s", "-1"}}, []string{"300", "purged"}},
		{"empty events count their overhead",
			[]string{"a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0", "a/s/0"},
			// 16 × 64 is over 1000: the first is dropped
			[][3]string{{"a", "s", "-1"}, {"a", "s", "0"}}, []string{"purged", strings.TrimSpace(strings.Repeat("0 ", 15))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newEventStore(max)
			appendAll(t, st, c.events...)
			for i, r := range c.replay {
				var index int
				if _, err := fmt.Sscan(r[2], &index); err != nil {
					t.Fatal(err)
				}
				if got := kept(st, r[0], r[1], index); got != c.want[i] {
					t.Errorf("replaying %s's stream %s after %d gave %q, want %q", r[0], r[1], index, got, c.want[i])
				}
			}
			if st.size > max {
				t.Errorf("the store holds %d bytes, over its bound %d", st.size, max)
			}
		})
	}
}

// A closed session's events are dropped, and what they held is free for
// the others.
func TestAClosedSessionsEventsAreDropped(t *testing.T) {
	st := newEventStore(1000)
	appendAll(t, st, "a/s/500", "b/s/100")
	if err := st.SessionClosed(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if got := kept(st, "a", "s", -1); got != "gone" {
		t.Errorf("the closed session's replay gave %q, want an error", got)
	}
	if st.size != 100+eventOverhead {
		t.Errorf("the store holds %d bytes after the close, want %d", st.size, 100+eventOverhead)
	}
}
