package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// This file is a rig for the tests of what reads a store (ReadPoint, a
// fork, a rewind) and must read only the messages around a point, never
// a conversation whole (issue 30: a move's cost does not grow with what
// came before its point).

// Counting is a Memory that counts what it is asked to read; the rest
// (Brancher, claims, ...) is Memory's. It is for one goroutine at a time:
// its counts are plain ints, which a test may set back to 0.
type Counting struct {
	*history.Memory
	// Wholes is how many times Messages (a conversation whole) was read.
	Wholes int
	// Ranged is how many messages MessagesBetween has given back.
	Ranged int
}

// Messages counts a read of a conversation whole, then reads as Memory
// does.
func (c *Counting) Messages(ctx context.Context, id string) ([]history.Message, error) {
	c.Wholes++
	return c.Memory.Messages(ctx, id)
}

// MessagesBetween reads as Memory does and counts the messages read.
func (c *Counting) MessagesBetween(ctx context.Context, id string, from, to int) ([]history.Message, error) {
	msgs, err := c.Memory.MessagesBetween(ctx, id, from, to)
	c.Ranged += len(msgs)
	return msgs, err
}

// NewCounting returns a Counting holding conversation id with msgs, its
// counts at 0; it fails t if they cannot be written.
func NewCounting(t *testing.T, id string, msgs ...history.Message) *Counting {
	t.Helper()
	ctx := context.Background()
	c := &Counting{Memory: &history.Memory{}}
	if err := c.Create(ctx, history.Conversation{ID: id}); err != nil {
		t.Fatalf("creating conversation %s: %v", id, err)
	}
	if err := c.Append(ctx, id, msgs...); err != nil {
		t.Fatalf("appending %d messages to conversation %s: %v", len(msgs), id, err)
	}
	return c
}

// Rounds are n rounds of a user's prompt and an answer in text: "prompt
// 0", "answer 0" to "prompt n-1", "answer n-1" (2n messages).
func Rounds(n int) []history.Message {
	out := make([]history.Message, 0, 2*n)
	for i := range n {
		out = append(out,
			UserText(fmt.Sprint("prompt ", i)),
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprint("answer ", i)}}})
	}
	return out
}
