package storetest

import (
	"context"
	"testing"
)

// Counting counts each read of a conversation whole and each message read
// by range, so that a test that wants none of the first does not pass
// because nothing was counted.
func TestCountingCountsWholeReadsAndMessagesReadByRange(t *testing.T) {
	ctx := context.Background()
	c := NewCounting(t, "c", Rounds(3)...)
	if c.Wholes != 0 || c.Ranged != 0 {
		t.Fatalf("a new Counting has counted %d whole reads and %d messages by range; want 0 and 0", c.Wholes, c.Ranged)
	}
	if msgs, err := c.Messages(ctx, "c"); err != nil || len(msgs) != 6 {
		t.Fatalf("Messages gave %d messages (%v); want the 6 of Rounds(3)", len(msgs), err)
	}
	if _, err := c.MessagesBetween(ctx, "c", 1, 4); err != nil {
		t.Fatalf("MessagesBetween(c, 1, 4): %v", err)
	}
	if c.Wholes != 1 || c.Ranged != 3 {
		t.Fatalf("after one whole read and a range of 3 Counting counted %d whole reads and %d messages by range; want 1 and 3", c.Wholes, c.Ranged)
	}
}
