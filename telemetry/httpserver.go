package telemetry

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The HTTP semantic conventions' attributes of a server span.
const (
	keyHTTPMethod = "http.request.method"
	keyHTTPRoute  = "http.route"
	keyHTTPStatus = "http.response.status_code"
	keyURLPath    = "url.path"
)

// ServerSpan is the span of an HTTP request a server answers (serve's
// API); its zero value (telemetry off) does nothing.
type ServerSpan struct{ span trace.Span }

// StartServer starts the span of HTTP request r (kind SERVER), continuing
// the trace of its traceparent header when it has one, and returns r's
// context carrying it: what r starts (a turn, a queued turn's job) goes
// under it. The span is named by r's method until End names its route.
// It is r's own context and the zero ServerSpan when telemetry is off.
func StartServer(r *http.Request) (context.Context, ServerSpan) {
	s := current.Load()
	if s == nil {
		return r.Context(), ServerSpan{}
	}
	ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(keyHTTPMethod, r.Method), attribute.String(keyURLPath, r.URL.Path)))
	return ctx, ServerSpan{span}
}

// End ends the request's span with its status and, when the request was
// routed to an endpoint, its route ("/v1/conversations/{id}/turns"), which
// then names the span "{method} {route}"; "" leaves it unnamed by route
// (a 404). A status of 500 or more marks the span as failed, by the
// conventions' rule for a server (a 4xx is the client's).
func (s ServerSpan) End(method, route string, status int) {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(attribute.Int(keyHTTPStatus, status))
	if route != "" {
		s.span.SetName(method + " " + route)
		s.span.SetAttributes(attribute.String(keyHTTPRoute, route))
	}
	if status >= http.StatusInternalServerError {
		s.span.SetAttributes(attribute.String(keyErrorType, strconv.Itoa(status)))
		s.span.SetStatus(codes.Error, http.StatusText(status))
	}
	s.span.End()
}
