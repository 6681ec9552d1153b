package history

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"github.com/myelin-run/myelin/internal/hugepage"
)

// A run's start has Unpack's arrays in huge pages (internal/hugepage):
// the messages, parts and usages of 110,000 answers, 10.6, 24.6 and 4.4
// MB, are made with hugepage.Make.
func TestUnpackMakesItsArraysInHugePagesWhileAllowed(t *testing.T) {
	msgs := make([]Message, 110000)
	for i := range msgs {
		msgs[i] = Message{Role: Assistant, Parts: []Part{{Type: TextPart, Text: "a line of a file"}}, Usage: &Usage{Input: i, Output: 1}}
	}
	packed := AppendPacked(nil, msgs)
	hugepage.Allow()
	defer hugepage.Stop()
	got, err := UnpackWithRoom(packed, 10)
	if err != nil {
		t.Fatal(err)
	}
	parts := unsafe.Slice(unsafe.SliceData(got[0].Parts), len(got))
	usages := unsafe.Slice(got[0].Usage, len(got))
	for name, advised := range map[string]func() (bool, error){
		"messages": func() (bool, error) { return hugepage.Advised(got) },
		"parts":    func() (bool, error) { return hugepage.Advised(parts) },
		"usages":   func() (bool, error) { return hugepage.Advised(usages) },
	} {
		ok, err := advised()
		if errors.Is(err, errors.ErrUnsupported) {
			t.Skip(err) // the kernel's setting: nothing is advised here
		}
		if err != nil || !ok {
			t.Errorf("the unpacked %s' array is not advised for huge pages (%v)", name, err)
		}
	}
	runtime.KeepAlive(packed)
}
