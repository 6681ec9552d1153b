package sse

import (
	"io"
	"sync"
)

// The readers every wire reads its answers with, kept between answers: a
// Reader's 32 KiB line buffer, allocated (and zeroed) afresh for every
// answer, was the largest allocation of a light round on each wire
// (docs/overhead.md, "Agent CPU per round, second pass").

// readers holds the Readers given back by Release.
var readers sync.Pool

// maxKept is the most bytes of grown buffers a Reader given back may hold
// and still be kept: one that read a huge event goes to the collector, so
// that the pool never holds an answer's worth of memory.
const maxKept = 256 << 10

// Borrow returns a Reader of src, taken from the readers given back by
// Release when there is one (NewReader otherwise). The caller must
// Release it when the stream is read, and must not keep it, nor any Event
// it gave, after that.
func Borrow(src io.Reader) *Reader {
	if r, _ := readers.Get().(*Reader); r != nil {
		r.Reset(src)
		return r
	}
	return NewReader(src)
}

// Release gives r back for a later Borrow. It drops r's hold on its
// stream (and its last event); r must not be used after it. A Reader
// whose buffers grew past maxKept is left to the collector instead.
func (r *Reader) Release() {
	r.Reset(nil)
	if r.small() {
		readers.Put(r)
	}
}

// small reports whether r's grown buffers are small enough to keep.
func (r *Reader) small() bool { return cap(r.line)+cap(r.data)+cap(r.name) <= maxKept }
