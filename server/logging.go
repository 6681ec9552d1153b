package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// What the server logs (Server.Logger): one line per HTTP request —
// method, path, status, bytes written, duration — and one per turn ended —
// conversation, turn, reason, rounds, tokens, duration. It never logs a
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

// logged returns w wrapped to count what is written, and the function
// that logs r's line once it is answered; w itself and a no-op when the
// server has no Logger.
func (s *Server) logged(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	if s.Logger == nil {
		return w, func() {}
	}
	lw := &loggedWriter{ResponseWriter: w}
	start := time.Now()
	return lw, func() {
		status := lw.status
		if status == 0 {
			status = http.StatusOK // nothing written: net/http answers 200
		}
		s.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", status),
			slog.Int64("bytes", lw.bytes),
			slog.Duration("duration", time.Since(start)))
	}
}

// logTurn logs turn fin of conversation id, which ran for took.
func (s *Server) logTurn(id string, fin turnFinishedEvent, took time.Duration) {
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
	s.Logger.LogAttrs(context.Background(), level, "turn", attrs...) // the turn outlives its request
}
