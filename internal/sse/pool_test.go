package sse

import (
	"strings"
	"testing"
)

// A borrowed Reader reads its stream from the start whatever the Reader
// given back before it had read, and one given back is let go of its
// stream.
func TestABorrowedReaderReadsItsOwnStreamFromItsStart(t *testing.T) {
	for i, first := range []string{
		"event: a\ndata: 1\n\n",
		"event: a\ndata: 1\n\nevent: b\ndata: half",
		"data: " + strings.Repeat("x", 70<<10) + "\n\n",
	} {
		r := Borrow(strings.NewReader(first))
		r.Next()
		r.Release()
		if r.r.Buffered() != 0 || r.ev.Data != nil {
			t.Errorf("%d: a released Reader still holds its stream's bytes", i)
		}
		r = Borrow(strings.NewReader("data: 2\n\nevent: c\ndata: 3\n\n"))
		var got []string
		for r.Next() {
			got = append(got, r.Event().Name+"|"+string(r.Event().Data))
		}
		if strings.Join(got, ",") != "|2,c|3" || r.Err() != nil {
			t.Errorf("after %.30q: %q, %v", first, got, r.Err())
		}
		r.Release()
	}
}

// A Reader that read a huge event is not kept for the next answer: the
// pool must not hold an answer's worth of memory.
func TestAReaderThatGrewPastTheBoundIsNotKept(t *testing.T) {
	for _, c := range []struct {
		size int
		kept bool
	}{{10, true}, {100 << 10, true}, {maxKept + 1, false}} {
		r := Borrow(strings.NewReader("data: " + strings.Repeat("x", c.size) + "\n\n"))
		if !r.Next() || len(r.Event().Data) != c.size {
			t.Fatalf("%d bytes: not read", c.size)
		}
		r.Reset(nil)
		if r.small() != c.kept {
			t.Errorf("an event of %d bytes: kept %v, want %v", c.size, r.small(), c.kept)
		}
	}
}
