package sse

import "io"

// Reset makes r read a new stream, src, from its start, as NewReader(src)
// would, keeping the buffers it grew: a wire that reads one stream per
// request can keep its Readers (in a sync.Pool) instead of allocating a
// buffer for each. The last Event's Data is no longer valid after it.
// It must not be called while another goroutine reads r.
func (r *Reader) Reset(src io.Reader) {
	r.r.Reset(src)
	r.line, r.data, r.name = r.line[:0], r.data[:0], r.name[:0]
	r.has, r.err, r.read = false, nil, false
	r.ev = Event{Name: r.ev.Name}
}
