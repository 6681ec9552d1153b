package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/telemetry"
)

// The trace a client's traceparent names, as the tests send it.
const (
	clientTrace     = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan      = "00f067aa0ba902b7"
	clientParent    = "00-" + clientTrace + "-" + clientSpan + "-01"
	turnsRoute      = "/v1/conversations/{id}/turns"
	turnsSpanName   = "POST " + turnsRoute
	notFoundSpanGET = "GET"
)

// recordSpans turns telemetry on for the rest of the test, its spans
// recorded in memory. Tests that call it must not run in parallel (the
// providers are the process's).
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore, err := telemetry.Use(tp, metricnoop.NewMeterProvider(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restore(); _ = tp.Shutdown(context.Background()) })
	return rec
}

// attrs are a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// spanNamed is the ended span named name, nil when none.
func spanNamed(rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	for _, s := range rec.Ended() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// descends reports whether span s is under the span of id, through the
// spans recorded.
func descends(rec *tracetest.SpanRecorder, s sdktrace.ReadOnlySpan, id trace.SpanID) bool {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, e := range rec.Ended() {
		byID[e.SpanContext().SpanID()] = e
	}
	for p := s.Parent(); p.IsValid(); {
		if p.SpanID() == id {
			return true
		}
		up, ok := byID[p.SpanID()]
		if !ok {
			return false
		}
		p = up.Parent()
	}
	return false
}

// A request with a traceparent gets a server span continuing that trace,
// named by its method and route, with the HTTP attributes; the turn it
// starts runs in that span's trace (its tool call's span under it) though
// it outlives the request; the request's and the turn's log lines name
// the trace and the span. A request no endpoint takes is named by its
// method alone.
func TestARequestContinuesItsTraceparentInAServerSpanAndItsTurnUnderIt(t *testing.T) {
	rec := recordSpans(t)
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "done"},
	)
	var logged syncBuffer
	f.srv.Logger = slog.New(slog.NewJSONHandler(&logged, nil))
	id := f.newConversation()
	w := f.watch(id)
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"go"}`, "traceparent", clientParent)
	if status != http.StatusAccepted {
		t.Fatalf("start turn: %d %s", status, body)
	}
	w.until(t, EventTurnFinished)
	if status, _ := f.do("GET", "/v1/nowhere", ""); status != http.StatusNotFound {
		t.Fatalf("GET /v1/nowhere: %d, want 404", status)
	}

	span := spanNamed(rec, turnsSpanName)
	if span == nil {
		t.Fatalf("no span %q among %v", turnsSpanName, names(rec))
	}
	sc := span.SpanContext()
	if sc.TraceID().String() != clientTrace || span.Parent().SpanID().String() != clientSpan || span.SpanKind() != trace.SpanKindServer {
		t.Errorf("the turn's POST span: trace %s, parent %s, kind %v; want trace %s, parent %s, kind server",
			sc.TraceID(), span.Parent().SpanID(), span.SpanKind(), clientTrace, clientSpan)
	}
	a := attrs(span)
	if a["http.request.method"].AsString() != "POST" || a["http.route"].AsString() != turnsRoute ||
		a["http.response.status_code"].AsInt64() != http.StatusAccepted || a["url.path"].AsString() != "/v1/conversations/"+id+"/turns" {
		t.Errorf("the turn's POST span's attributes: %v; want method POST, route %s, status 202, its path", a, turnsRoute)
	}
	call := spanNamed(rec, "execute_tool noop--run")
	if call == nil {
		t.Fatalf("no span of the turn's tool call among %v", names(rec))
	}
	if call.SpanContext().TraceID().String() != clientTrace || !descends(rec, call, sc.SpanID()) {
		t.Errorf("the turn's tool call: trace %s, parent %s; want it under the POST's span %s of trace %s",
			call.SpanContext().TraceID(), call.Parent().SpanID(), sc.SpanID(), clientTrace)
	}
	nf := spanNamed(rec, notFoundSpanGET)
	if nf == nil || attrs(nf)["http.response.status_code"].AsInt64() != http.StatusNotFound || attrs(nf)["http.route"].Type() != attribute.INVALID {
		t.Errorf("the 404's span: %v; want one named GET, status 404, no route", nf)
	}

	var request, turn map[string]any
	for _, l := range logged.lines(t) {
		switch {
		case l["msg"] == "request" && l["method"] == "POST" && strings.HasSuffix(l["path"].(string), "/turns"):
			request = l
		case l["msg"] == "turn":
			turn = l
		}
	}
	if request["trace_id"] != clientTrace || request["span_id"] != sc.SpanID().String() {
		t.Errorf("the POST's log line names trace %v span %v; want %s and its span %s", request["trace_id"], request["span_id"], clientTrace, sc.SpanID())
	}
	if turn["trace_id"] != clientTrace || turn["span_id"] != sc.SpanID().String() {
		t.Errorf("the turn's log line names trace %v span %v; want %s and the POST's span %s", turn["trace_id"], turn["span_id"], clientTrace, sc.SpanID())
	}
}

// A queued turn's job carries the traceparent of the request that queued
// it (its server span), and the worker's RunQueued continues that trace:
// the turn's spans are under the request's span, in another process as
// well. A job without one (an older version's) runs, in a trace of its
// own.
func TestAQueuedTurnCarriesItsRequestsTraceToTheWorker(t *testing.T) {
	rec := recordSpans(t)
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "done"},
		providertest.Step{Text: "again"},
	)
	q := &memQueue{store: f.store, pending: map[string]QueuedTurn{}, jobs: make(chan QueuedTurn, 4)}
	f.srv.Queue = q
	id := f.newConversation()
	w := f.watch(id)
	if status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"go"}`, "traceparent", clientParent); status != http.StatusAccepted {
		t.Fatalf("start turn: %d %s", status, body)
	}
	job := <-q.jobs
	span := spanNamed(rec, turnsSpanName)
	if span == nil {
		t.Fatalf("no span %q among %v", turnsSpanName, names(rec))
	}
	want := "00-" + clientTrace + "-" + span.SpanContext().SpanID().String() + "-01"
	if job.TraceParent != want {
		t.Fatalf("the job's trace_parent is %q; want the POST's span's, %q", job.TraceParent, want)
	}
	if err := f.srv.RunQueued(context.Background(), id, job); err != nil {
		t.Fatal(err)
	}
	w.until(t, EventTurnFinished)
	call := spanNamed(rec, "execute_tool noop--run")
	if call == nil {
		t.Fatalf("no span of the queued turn's tool call among %v", names(rec))
	}
	if call.SpanContext().TraceID().String() != clientTrace || !descends(rec, call, span.SpanContext().SpanID()) {
		t.Fatalf("the queued turn's tool call: trace %s, parent %s; want it under the POST's span %s of trace %s",
			call.SpanContext().TraceID(), call.Parent().SpanID(), span.SpanContext().SpanID(), clientTrace)
	}

	// an older job, without the field
	q.done(id)
	if status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"more"}`); status != http.StatusAccepted {
		t.Fatalf("start the second turn: %d %s", status, body)
	}
	old := <-q.jobs
	old.TraceParent = ""
	if err := f.srv.RunQueued(context.Background(), id, old); err != nil {
		t.Fatalf("a job without trace_parent: %v", err)
	}
	if evs := w.until(t, EventTurnFinished); !strings.Contains(string(evs[len(evs)-1].Data), `"reason":"end_turn"`) {
		t.Fatalf("a job without trace_parent ended %s", evs[len(evs)-1].Data)
	}
}

// names are the names of the spans recorded, for failure messages.
func names(rec *tracetest.SpanRecorder) []string {
	var out []string
	for _, s := range rec.Ended() {
		out = append(out, s.Name())
	}
	return out
}
