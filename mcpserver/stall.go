package mcpserver

import (
	"net/http"
	"time"
)

// A Handler's writes to a host carry a deadline: each piece of at most
// stallChunk bytes, and each flush, must reach the host's socket within
// Config.WriteStall, or the write fails and net/http ends the
// connection. The SDK writes a notification (resources/updated,
// list_changed) to each session in turn, on one goroutine, with no
// deadline a stuck socket would honour (v1.8.0: notifySessions' context
// does not reach http.ResponseWriter.Write): without this, one host that
// opens its standing GET stream and never reads it holds every other
// host's notifications for good once its socket's buffers are full. With
// it, such a host holds them for one WriteStall, and then its stream is
// gone. What "no progress" means is the kernel's: a write blocked on a
// full socket goes on only once about half of the send buffer has
// drained, and Linux grows that buffer to some MB for a fast sender, so
// a host reading a large answer (a blob) much slower than ~150–200 KB/s may
// be cut mid-answer too (the review measured a host reading 1.3 MB/s
// with a 300 ms stall cut after 4 MB). Hosts read their answers as they
// come; one that reads that slowly gets its stream cut and asks again.

// DefaultWriteStall is how long a write to a host may make no progress
// when Config.WriteStall is 0.
const DefaultWriteStall = 10 * time.Second

// stallChunk is the most a write sends under one deadline.
const stallChunk = 64 << 10

// bounded wraps h so that each of its writes to the host makes progress
// within stall (see above).
func bounded(h http.Handler, stall time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}, r)
	})
}

// stallWriter is a ResponseWriter whose writes and flushes fail when
// they make no progress for stall. It must not be used past its
// request's handler.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

// Write writes p a stallChunk at a time, each under the deadline, and
// clears the deadline after (so that net/http's own end of the response
// is not cut by it).
func (w *stallWriter) Write(p []byte) (int, error) {
	defer w.clear()
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), stallChunk)]
		w.arm()
		m, err := w.ResponseWriter.Write(c)
		n += m
		if err != nil {
			return n, err
		}
		p = p[len(c):]
	}
	return n, nil
}

// FlushError flushes what is buffered to the host under the deadline
// (http.ResponseController.Flush calls it).
func (w *stallWriter) FlushError() error {
	defer w.clear()
	w.arm()
	return w.rc.Flush()
}

// Flush is FlushError for callers of http.Flusher.
func (w *stallWriter) Flush() { _ = w.FlushError() }

// Unwrap is the ResponseWriter wrapped, for http.ResponseController.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// arm sets the deadline of the next write; a writer that cannot take one
// (not a net/http server's) writes without.
func (w *stallWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.stall)) }

// clear takes the deadline off.
func (w *stallWriter) clear() { _ = w.rc.SetWriteDeadline(time.Time{}) }
