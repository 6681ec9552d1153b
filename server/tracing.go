package server

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/myelin-run/myelin/telemetry"
)

// The server's side of the trace context (docs/serve.md): each HTTP
// request continues the trace of its traceparent header in a server span
// of its own (telemetry.StartServer), and a turn it starts — run here,
// detached from the request, or queued for a worker
// (QueuedTurn.TraceParent) — continues the trace of that span. With
// telemetry off none of it does anything.

// serverSpan is r continuing the trace of its traceparent in a new
// server span, and the function that ends the span once r is answered
// with status: r itself and a no-op when telemetry is off.
func serverSpan(r *http.Request) (*http.Request, func(status int)) {
	ctx, span := telemetry.StartServer(r)
	if ctx == r.Context() {
		return r, func(int) {}
	}
	r = r.WithContext(ctx)
	// the mux sets r.Pattern on this request as it routes it
	return r, func(status int) { span.End(r.Method, routeOf(r.Pattern), status) }
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
	if route := strings.TrimSuffix(pattern, "{$}"); route != "" {
		return route
	}
	return pattern
}

// inTrace is ctx (a turn's, detached from the request that started it)
// carrying the span from carries (the request's), so that the turn's
// spans are that span's children; ctx itself when from carries none
// (telemetry off).
func inTrace(ctx, from context.Context) context.Context {
	if sc := trace.SpanContextFromContext(from); sc.IsValid() {
		return trace.ContextWithSpanContext(ctx, sc)
	}
	return ctx
}
