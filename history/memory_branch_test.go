package history_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// A Memory's fork holds no copy of its base's messages: making one costs
// the same whatever the base's length, and what it reads are the base's
// stored parts themselves (the suite, history/storetest, holds the rest).
func TestAMemoryForkSharesItsBasesMessagesWithoutCopying(t *testing.T) {
	ctx := context.Background()
	s := &history.Memory{}
	if err := s.Create(ctx, history.Conversation{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	const long = 10_000
	msgs := make([]history.Message, long)
	for i := range msgs {
		msgs[i] = history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("message %d", i)}}}
	}
	if err := s.Append(ctx, "b", msgs...); err != nil {
		t.Fatal(err)
	}
	const forks = 50
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range forks {
		if _, err := s.Fork(ctx, history.Conversation{ID: fmt.Sprintf("f%d", i), Base: "b", BaseAt: long}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// a copy of the base's messages would be long × the size of a Message
	// (over a megabyte) a fork; a fork's record is well under 4 KiB
	if per := (after.TotalAlloc - before.TotalAlloc) / forks; per > 4<<10 {
		t.Fatalf("a fork of a %d-message conversation allocated %d bytes; want its record alone, no copy of the messages", long, per)
	}
	base, err := s.Messages(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	fork, err := s.Messages(ctx, "f0")
	if err != nil {
		t.Fatal(err)
	}
	if len(fork) != long || &fork[0].Parts[0] != &base[0].Parts[0] || &fork[long-1].Parts[0] != &base[long-1].Parts[0] {
		t.Fatalf("the fork reads %d messages whose parts are not the base's stored parts; want the base's, shared", len(fork))
	}
}
