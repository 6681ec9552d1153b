package sse

import (
	"errors"
	"strings"
	"testing"
)

// A Reader reset onto a new stream reads it from its start, as a new
// Reader would: nothing of the last stream — a pending event, its name,
// a half-read line, the end or an error — carries over.
func TestAResetReaderReadsTheNewStreamAsANewReaderWould(t *testing.T) {
	for _, first := range []string{
		"event: a\ndata: 1\n\n",                         // read to its end
		"event: a\ndata: 1\n\nevent: b\ndata: half",     // stopped inside an event
		"data: " + strings.Repeat("x", 70<<10) + "\n\n", // a line longer than the buffer
	} {
		r := NewReader(strings.NewReader(first))
		r.Next()
		r.Reset(strings.NewReader("data: 2\n\nevent: c\ndata: 3\n\n"))
		var got []string
		for r.Next() {
			got = append(got, r.Event().Name+"|"+string(r.Event().Data))
		}
		if strings.Join(got, ",") != "|2,c|3" || r.Err() != nil {
			t.Errorf("after %.30q: %q, %v", first, got, r.Err())
		}
	}
	r := NewReader(errReader{})
	if r.Next() || r.Err() == nil {
		t.Fatal("no error to start from")
	}
	r.Reset(strings.NewReader("data: ok\n\n"))
	if !r.Next() {
		t.Fatalf("no event after the reset: %v", r.Err())
	}
	if string(r.Event().Data) != "ok" || r.Err() != nil {
		t.Fatalf("after the reset: data %q, error %v; want ok and no error carried over", r.Event().Data, r.Err())
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
