package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/myelin-run/myelin/history"
)

// A stored message of many parts (an answer of many calls, their results
// in one message) is read back at a cost in proportion to its parts.
func TestReadingAMessageOfManyPartsAllocatesInProportion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	m := history.Message{Role: history.Assistant}
	for i := range n {
		m.Parts = append(m.Parts, history.Part{Type: history.ToolCallPart, CallID: fmt.Sprint("toolu_", i), Name: "workspace--read", Input: json.RawMessage(`{"path":"a"}`)})
	}
	if err := s.Append(ctx, "c", m); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fresh, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	msgs, err := fresh.Messages(ctx, "c")
	runtime.ReadMemStats(&b)
	if err != nil || len(msgs) != 1 || len(msgs[0].Parts) != n {
		t.Fatalf("read back: %d messages, err %v", len(msgs), err)
	}
	alloc := b.TotalAlloc - a.TotalAlloc
	partsBytes := uint64(n) * uint64(unsafe.Sizeof(history.Part{}))
	if alloc > 10*partsBytes {
		t.Fatalf("reading one stored message of %d parts allocated %d MiB, %d× the %d KiB its parts take (a new parts buffer one part larger for every part past the first buffer: history.Decoder.moreParts)", n, alloc>>20, alloc/partsBytes, partsBytes>>10)
	}
}
