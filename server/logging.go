package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/myelin-run/myelin/telemetry"
)

// What the server logs (Server.Logger): one line per HTTP request —
// method, path, status, bytes written, duration — and one per turn ended —
// conversation, turn, reason, rounds, tokens, duration —, each with the
// trace_id and span_id of its trace when telemetry is on (tracing.go). It never logs a
// request's headers (the token) nor a body, a prompt or an answer.

// loggedWriter counts what a handler writes, for the request's log line.
// It passes Flush on and unwraps (http.ResponseController), so event
// streams work through it.
type loggedWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (l *loggedWriter) WriteHeader(status int) {
	if l.status == 0 {
		l.status = status
	}
	l.ResponseWriter.WriteHeader(status)
}

func (l *loggedWriter) Write(p []byte) (int, error) {
	if l.status == 0 {
		l.status = http.StatusOK
	}
	n, err := l.ResponseWriter.Write(p)
	l.bytes += int64(n)
	return n, err
}

// Flush flushes the connection's writer, when it can.
func (l *loggedWriter) Flush() {
	if f, ok := l.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is the writer under l, for http.ResponseController.
func (l *loggedWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }

// logged returns w wrapped to count what is written, r continuing the
// trace of its traceparent in a server span of its own when telemetry is
// on (tracing.go), and the function that ends the span and logs r's line
// once it is answered; w, r and a no-op when the server has no Logger and
// telemetry is off. The line names the span's trace and span ids. The
// function must be deferred by the handler's caller: a handler that
// panics before writing is logged (and its span ended) as a 500 with
// aborted true, at level error, and the panic goes on to net/http.
func (s *Server) logged(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, func()) {
	r, endSpan := serverSpan(r)
	if s.Logger == nil && !telemetry.On() {
		return w, r, func() {}
	}
	lw := &loggedWriter{ResponseWriter: w}
	start := time.Now()
	return lw, r, func() {
		// a handler that panicked answered nothing more: net/http closes
		// the connection (and logs the panic) once it is passed on
		p := recover()
		status := lw.status
		switch {
		case status == 0 && p != nil:
			status = http.StatusInternalServerError // nothing written, and nothing will be
		case status == 0:
			status = http.StatusOK // nothing written: net/http answers 200
		}
		endSpan(status)
		if s.Logger != nil {
			attrs := append(make([]slog.Attr, 0, 8),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int64("bytes", lw.bytes),
				slog.Duration("duration", time.Since(start)))
			level := slog.LevelInfo
			if p != nil {
				level = slog.LevelError
				attrs = append(attrs, slog.Bool("aborted", true))
			}
			s.Logger.LogAttrs(r.Context(), level, "request", traced(r.Context(), attrs)...)
		}
		if p != nil {
			panic(p)
		}
	}
}

// traced is attrs and the trace and span ids of the span ctx carries
// (trace_id, span_id), when it carries one and telemetry is on.
func traced(ctx context.Context, attrs []slog.Attr) []slog.Attr {
	if traceID, spanID := telemetry.IDs(ctx); traceID != "" {
		attrs = append(attrs, slog.String("trace_id", traceID), slog.String("span_id", spanID))
	}
	return attrs
}

// logTurn logs turn fin of conversation id, which ran for took under
// ctx: its line names the trace the turn continued (the span of the
// request that started it, or a queued turn's traceparent).
func (s *Server) logTurn(ctx context.Context, id string, fin turnFinishedEvent, took time.Duration) {
	if s.Logger == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("conversation", id),
		slog.String("turn", fin.Turn),
		slog.String("reason", fin.Reason),
		slog.Int("rounds", fin.Rounds),
		slog.Int("input_tokens", fin.Usage.Input),
		slog.Int("output_tokens", fin.Usage.Output),
		slog.Int("cache_read_tokens", fin.Usage.CacheRead),
		slog.Int("cache_write_tokens", fin.Usage.CacheWrite),
		slog.Duration("duration", took),
	}
	level := slog.LevelInfo
	if fin.Error != "" {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", fin.Error))
	}
	s.Logger.LogAttrs(context.WithoutCancel(ctx), level, "turn", traced(ctx, attrs)...)
}
