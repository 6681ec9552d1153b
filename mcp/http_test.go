package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/mcp/mcptest"
)

// A server may close a tools/call's SSE stream after its priming event and
// send the reply on the stream the client resumes with GET and
// Last-Event-ID (MCP 2025-11-25, "Resumability and Redelivery"): the
// reply's raw result is kept from the resumed stream as from the POST's,
// within the same bound.
func TestAReplyOnAResumedStreamIsRead(t *testing.T) {
	inner := mcptest.Handler(false)
	var resumed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			resumed.Add(1)
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the Set closes (cleanups run last first): its standalone stream is open until then
	h := start(t, []Server{{Name: "web", Type: "http", URL: srv.URL}}, Options{MaxReply: 1 << 20})
	if f := h.set.Failures(); f != nil {
		t.Fatal(f)
	}
	tests := []struct {
		name, input string
		want        string // the text, or for an error what it holds
		isError     bool
	}{
		{"a text", `{"text":"after the stream was resumed"}`, "after the stream was resumed", false},
		{"a second call on the same session", `{"text":"again"}`, "again", false},
		{"a reply over the bound", `{"mib":2}`, "reply too large: the reply was 2.0 MiB", true},
		{"a call after the one over the bound", `{"text":"still"}`, "still", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := resumed.Load()
			out := h.call("web--resumed", tt.input)
			if resumed.Load() == before {
				t.Fatalf("the client did not resume the stream (no GET with Last-Event-ID); the call gave %.200q", out.Text)
			}
			switch {
			case out.IsError != tt.isError:
				t.Errorf("error %v, want %v: %.300q", out.IsError, tt.isError, out.Text)
			case !tt.isError && out.Text != tt.want:
				t.Errorf("text %.300q, want %q", out.Text, tt.want)
			case tt.isError && !strings.Contains(out.Text, tt.want):
				t.Errorf("text %.300q, want it to hold %q", out.Text, tt.want)
			}
		})
	}
}
