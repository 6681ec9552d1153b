package rewind_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
)

// A rewind to a point inside a round (after an answer with tool calls,
// before their results) would leave the conversation's next turn a round
// to recover: its calls run again or answered "interrupted". It is
// refused, naming the points on either side, and nothing moves (issue 30,
// review M1).
func TestARewindInsideARoundIsRefusedNamingThePointsAround(t *testing.T) {
	for _, ns := range stores(t) {
		t.Run(ns.name, func(t *testing.T) {
			ctx := context.Background()
			store := ns.store
			if err := store.Create(ctx, history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			err := store.Append(ctx, "c",
				history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "first"}}},
				history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_1", Name: "agent--delegate", Input: []byte(`{"task":"x"}`)}}},
				history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_1", Text: "done"}}},
				history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "answered"}}},
			)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = rewind.Rewind(ctx, store, "c", 2, rewind.Options{})
			if !errors.Is(err, history.ErrInsideRound) {
				t.Fatalf("a rewind to 2 (after the answer with a call, before its result) gave %v, want an error wrapping history.ErrInsideRound", err)
			}
			if !strings.Contains(err.Error(), "give 1 (before the answer) or 3 (after its results)") {
				t.Fatalf("the error %q does not name the points 1 and 3 on either side of the round", err)
			}
			if c, err := store.Get(ctx, "c"); err != nil || c.Messages != 4 {
				t.Fatalf("after the refused rewind the conversation holds %d messages (%v), want all 4", c.Messages, err)
			}
			if _, _, err := rewind.Rewind(ctx, store, "c", 3, rewind.Options{}); err != nil {
				t.Fatalf("a rewind to 3, after the round's results, failed: %v", err)
			}
		})
	}
}
