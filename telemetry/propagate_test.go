package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/telemetry/otlp"
	"github.com/myelin-run/myelin/telemetry/otlptest"
	"go.opentelemetry.io/otel"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// setup runs otlp.Setup and shuts it down when t ends.
func setup(t *testing.T) {
	t.Helper()
	shutdown, err := otlp.Setup(context.Background(), otlp.Config{Service: "myelin-test"})
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() { shutdown(context.Background()) })
}

func TestTraceContextCrossesAJobAndAnHTTPRequest(t *testing.T) {
	r := otlptest.Start(t)
	r.UseHTTP(t)
	setup(t)
	ctx, span := otel.Tracer("t").Start(context.Background(), "request")
	defer span.End()
	tp := telemetry.TraceParent(ctx)
	if !strings.HasPrefix(tp, "00-"+span.SpanContext().TraceID().String()+"-"+span.SpanContext().SpanID().String()) {
		t.Fatalf("TraceParent = %q, want the span's trace and span ids", tp)
	}
	// a job carries it to a worker, which continues the trace
	wctx := telemetry.WithTraceParent(context.Background(), tp)
	_, child := otel.Tracer("t").Start(wctx, "worker")
	if child.SpanContext().TraceID() != span.SpanContext().TraceID() {
		t.Errorf("the worker's span is in trace %s, want the request's %s", child.SpanContext().TraceID(), span.SpanContext().TraceID())
	}
	child.End()
	if got := telemetry.WithTraceParent(context.Background(), "not a traceparent"); got != context.Background() {
		t.Error("a malformed traceparent changed the context")
	}

	// an HTTP request made under the child's context carries it
	var seen http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() }))
	defer srv.Close()
	c := &http.Client{Transport: telemetry.Transport(nil)}
	req, _ := http.NewRequestWithContext(oteltrace.ContextWithSpan(wctx, child), http.MethodGet, srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := child.SpanContext().SpanID().String(); !strings.Contains(seen.Get("traceparent"), want) {
		t.Errorf("the request's traceparent = %q, want the calling span's id %s", seen.Get("traceparent"), want)
	}
	if req.Header.Get("traceparent") != "" {
		t.Error("Transport changed the caller's request (a RoundTripper must clone it)")
	}
	// and the server side continues it
	sctx := telemetry.FromRequest(context.Background(), seen)
	if id, _ := telemetry.IDs(sctx); id != span.SpanContext().TraceID().String() {
		t.Errorf("FromRequest's trace id = %q, want %s", id, span.SpanContext().TraceID())
	}
}
