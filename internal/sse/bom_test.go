package sse

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

func TestALeadingByteOrderMarkIsDroppedAsTheFormatSays(t *testing.T) {
	for name, stream := range map[string]string{
		"whole":    "\ufeffdata: x\n\ndata: \ufeffy\n\n",
		"one byte": "\ufeffdata: x\n\ndata: \ufeffy\n\n",
	} {
		var r *Reader
		if name == "one byte" {
			r = NewReader(iotest.OneByteReader(strings.NewReader(stream)))
		} else {
			r = NewReader(strings.NewReader(stream))
		}
		var got []string
		for r.Next() {
			got = append(got, string(r.Event().Data))
		}
		if r.Err() != nil || len(got) != 2 || got[0] != "x" || got[1] != "\ufeffy" {
			t.Fatalf("%s: events %q, err %v", name, got, r.Err())
		}
	}
	// Reset starts a new stream: its mark is dropped too
	r := NewReader(strings.NewReader("data: a\n\n"))
	for r.Next() {
	}
	r.Reset(strings.NewReader("\ufeffdata: b\n\n"))
	if !r.Next() || string(r.Event().Data) != "b" {
		t.Fatalf("after Reset: %q, err %v", r.Event().Data, r.Err())
	}
}

func TestAReadErrorAtTheStartOfTheStreamIsItsError(t *testing.T) {
	broken := errors.New("connection reset")
	r := NewReader(iotest.ErrReader(broken))
	if r.Next() || !errors.Is(r.Err(), broken) {
		t.Fatalf("err %v", r.Err())
	}
}
