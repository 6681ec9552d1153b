package rewind_test

import (
	"context"
	"errors"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
	"github.com/myelin-run/myelin/rewind"
)

// A rewind that puts back no files checks its point against the messages
// around it only, never reading the conversation whole: inside a round
// it is refused, between rounds it rewinds (issue 30: moves at a cost
// that does not grow with what came before the point).
func TestARewindWithoutFilesReadsOnlyTheMessagesAroundItsPoint(t *testing.T) {
	ctx := context.Background()
	msgs := append(storetest.Rounds(500),
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_1", Name: "agent--delegate", Input: []byte(`{"task":"x"}`)}}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_1", Text: "done"}}})
	store := storetest.NewCounting(t, "c", msgs...)
	if _, _, err := rewind.Rewind(ctx, store, "c", 1001, rewind.Options{}); !errors.Is(err, history.ErrInsideRound) {
		t.Fatalf("a rewind to 1001 (after the answer with a call, before its result) gave %v; want history.ErrInsideRound", err)
	}
	if _, _, err := rewind.Rewind(ctx, store, "c", 998, rewind.Options{}); err != nil {
		t.Fatalf("a rewind to 998, between rounds, failed: %v", err)
	}
	if c, err := store.Get(ctx, "c"); err != nil || c.Messages != 998 {
		t.Fatalf("after the rewind to 998 the conversation holds %d messages (%v)", c.Messages, err)
	}
	if store.Wholes != 0 {
		t.Fatalf("the rewinds read the conversation of %d messages whole %d times; want none (only the messages around the point)", len(msgs), store.Wholes)
	}
}
