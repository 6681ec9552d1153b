package history

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/myelin-run/myelin/internal/hugepage"
)

// A run's start has Unpack's arrays in huge pages (internal/hugepage):
// the messages and the parts of 50,000 messages, 4.8 and 11 MB, are made
// with hugepage.Make.
func TestUnpackMakesItsArraysInHugePagesWhileAllowed(t *testing.T) {
	msgs := make([]Message, 50000)
	for i := range msgs {
		msgs[i] = Message{Role: User, Parts: []Part{{Type: TextPart, Text: "a line of a file"}}}
	}
	packed := AppendPacked(nil, msgs)
	hugepage.Allow()
	got, err := UnpackWithRoom(packed, 10)
	hugepage.Stop()
	if err != nil {
		t.Fatal(err)
	}
	parts := unsafe.Slice(unsafe.SliceData(got[0].Parts), len(got))
	for name, advised := range map[string]func() (bool, error){
		"messages": func() (bool, error) { return hugepage.Advised(got) },
		"parts":    func() (bool, error) { return hugepage.Advised(parts) },
	} {
		ok, err := advised()
		if err != nil && strings.Contains(err.Error(), "unsupported") {
			t.Skip(err)
		}
		if err != nil || !ok {
			t.Errorf("the unpacked %s' array is not advised for huge pages (%v)", name, err)
		}
	}
	runtime.KeepAlive(packed)
}
