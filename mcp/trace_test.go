package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/tool"
)

// callHeaders is an MCP server over HTTP on loopback that records the
// traceparent header of each tools/call it is sent.
type callHeaders struct {
	mu   sync.Mutex
	seen []string
}

func (c *callHeaders) serve(t *testing.T, jsonResponse bool) string {
	inner := mcptest.Handler(jsonResponse)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				c.mu.Lock()
				c.seen = append(c.seen, r.Header.Get("traceparent"))
				c.mu.Unlock()
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the Set closes: its standalone stream is open until then
	return srv.URL
}

func (c *callHeaders) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) == 0 {
		return "(no tools/call)"
	}
	return c.seen[len(c.seen)-1]
}

// A tool call to an MCP server over HTTP sends the traceparent of the
// call's context — its execute_tool span, in the trace of the turn — so
// the server joins the trace; with telemetry off it sends none. Both
// reply forms (an SSE stream, a JSON body) go through the same round
// trip.
func TestAnHTTPToolCallSendsTheTraceparentOfItsSpan(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("jsonResponse=%v", jsonResponse), func(t *testing.T) {
			var calls callHeaders
			url := calls.serve(t, jsonResponse)
			h := start(t, []Server{{Name: "web", Type: "http", URL: url}}, Options{MaxReply: 1 << 20})
			if f := h.set.Failures(); f != nil {
				t.Fatal(f)
			}

			if out := h.call("web--echo", `{"text":"off"}`); out.Text != "off" {
				t.Fatalf("echo with telemetry off: %q", out.Text)
			}
			if got := calls.last(); got != "" {
				t.Errorf("with telemetry off the call sent traceparent %q; want none", got)
			}

			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			restore, err := telemetry.Use(tp, metricnoop.NewMeterProvider(), false)
			if err != nil {
				t.Fatal(err)
			}
			defer restore()
			ctx := telemetry.WithTraceParent(context.Background(), parent)
			out := h.d.Call(ctx, tool.Call{ID: "call_traced", Name: "web--echo", Input: json.RawMessage(`{"text":"on"}`)})
			if out.Text != "on" {
				t.Fatalf("echo with telemetry on: %q", out.Text)
			}
			var span sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "execute_tool web--echo" {
					span = s
				}
			}
			if span == nil {
				t.Fatal("the call made no execute_tool span")
			}
			want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + span.SpanContext().SpanID().String() + "-01"
			if got := calls.last(); got != want {
				t.Errorf("the call sent traceparent %q; want its execute_tool span's, %q", got, want)
			}
			if span.Parent().SpanID().String() != "00f067aa0ba902b7" {
				t.Errorf("the execute_tool span's parent is %s; want the context's span 00f067aa0ba902b7", span.Parent().SpanID())
			}
		})
	}
}

// A traceparent the server's entry gives in its headers is sent as
// given: the call's own is not put in its place.
func TestATraceparentInTheServersHeadersIsKept(t *testing.T) {
	const given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var calls callHeaders
	url := calls.serve(t, true)
	h := start(t, []Server{{Name: "web", Type: "http", URL: url, Headers: map[string]string{"traceparent": given}}}, Options{MaxReply: 1 << 20})
	if f := h.set.Failures(); f != nil {
		t.Fatal(f)
	}
	tp := sdktrace.NewTracerProvider()
	restore, err := telemetry.Use(tp, metricnoop.NewMeterProvider(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	ctx := telemetry.WithTraceParent(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if out := h.d.Call(ctx, tool.Call{ID: "call_given", Name: "web--echo", Input: json.RawMessage(`{"text":"x"}`)}); out.Text != "x" {
		t.Fatalf("echo: %q", out.Text)
	}
	if got := calls.last(); got != given {
		t.Errorf("the call sent traceparent %q; want the one the entry gives, %q", got, given)
	}
}
