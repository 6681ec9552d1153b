package server

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/myelin-run/myelin/telemetry"
)

// The server's side of the trace context (docs/serve.md): each HTTP
// request continues the trace of its traceparent header in a server span
// of its own, and a turn it starts — run here, detached from the
// request, or queued for a worker (QueuedTurn.TraceParent) — continues
// the trace of that span. With telemetry off none of this runs.

// serverSpan is r continuing the trace of its traceparent in a new
// server span named for its method (the route is known once the mux has
// routed it: endSpan names it then), and the span; r itself and nil when
// telemetry is off.
func serverSpan(r *http.Request) (*http.Request, trace.Span) {
	if !telemetry.On() {
		return r, nil
	}
	ctx := telemetry.FromRequest(r.Context(), r.Header)
	ctx, span := otel.Tracer(telemetry.ScopeName).Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
	return r.WithContext(ctx), span
}

// endSpan ends r's server span with its status and, when the mux routed r
// to an endpoint, its route, which then names the span ("POST
// /v1/conversations/{id}/turns"). A status of 500 or more is an error
// (the semantic conventions' rule for a server span).
func endSpan(span trace.Span, r *http.Request, status int) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if route := routeOf(r.Pattern); route != "" {
		span.SetName(r.Method + " " + route)
		span.SetAttributes(attribute.String("http.route", route))
	}
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// routeOf is the route of a ServeMux pattern ("POST /v1/x/{id}" is
// "/v1/x/{id}"): "" for the catch-alls that answer 404 and 405, which
// are no route.
func routeOf(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	switch pattern {
	case "/", "/v1/":
		return ""
	}
	return strings.TrimSuffix(pattern, "{$}")
}

// inTrace is ctx (a turn's, detached from the request that started it)
// continuing the trace of the span from carries (the request's), so that
// the turn's spans are that span's children; ctx itself when from
// carries none or telemetry is off.
func inTrace(ctx, from context.Context) context.Context {
	return telemetry.WithTraceParent(ctx, telemetry.TraceParent(from))
}
