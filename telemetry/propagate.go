package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext is the W3C trace-context propagator (traceparent,
// tracestate): what crosses HTTP and a queued turn's job.
var traceContext propagation.TraceContext

// TraceParent is the W3C traceparent of the span ctx carries, to be
// carried where a header cannot go (a queued turn's job); "" when
// telemetry is off or ctx carries no span.
func TraceParent(ctx context.Context) string {
	if !On() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceParent is ctx continuing the trace that traceparent (as
// TraceParent wrote it) names: spans started under it are its children.
// It is ctx itself when telemetry is off or traceparent is "" or not
// well formed.
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if !On() || traceparent == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// FromRequest is ctx continuing the trace of the request's traceparent
// and tracestate headers, when it has them; ctx itself when telemetry is
// off.
func FromRequest(ctx context.Context, h http.Header) context.Context {
	if !On() {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.HeaderCarrier(h))
}

// Transport is rt (http.DefaultTransport when nil) sending each request
// with the traceparent of the span its context carries, so that the
// server it reaches (an MCP server over HTTP) joins the trace. It adds no
// header when telemetry is off, and never replaces one the request has.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return transport{rt}
}

type transport struct{ next http.RoundTripper }

// RoundTrip sends r, with the trace context of r's context when there is
// one to send. r is cloned before a header is added (a RoundTripper must
// not change its request).
func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if On() && r.Header.Get("traceparent") == "" {
		if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
			r = r.Clone(r.Context())
			traceContext.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
		}
	}
	return t.next.RoundTrip(r)
}

// IDs are the trace and span ids of the span ctx carries, as hex, for a
// log line to name; "" when telemetry is off or ctx carries none.
func IDs(ctx context.Context) (traceID, spanID string) {
	if !On() {
		return "", ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}
