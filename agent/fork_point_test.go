package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// A fork checks its point against the messages around it only, never
// reading the conversation whole (issue 30: a fork of a 10,000-message
// conversation O(1) in its length): at the end while a round is in
// flight it forks before the answer, inside a round it is refused, and
// between rounds it forks there, through a store that reads ranges.
func TestAForkReadsOnlyTheMessagesAroundItsPoint(t *testing.T) {
	ctx := context.Background()
	msgs := append(storetest.Rounds(500),
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_1", Name: "agent--delegate", Input: []byte(`{"task":"x"}`)}}})
	store := storetest.NewCounting(t, "c", msgs...)
	for _, tc := range []struct{ at, want int }{{-1, 1000}, {500, 500}, {1000, 1000}, {0, 0}} {
		id, err := Fork(ctx, store, "c", tc.at)
		if err != nil {
			t.Fatalf("a fork at %d failed: %v", tc.at, err)
		}
		if f, err := store.Get(ctx, id); err != nil || f.BaseAt != tc.want {
			t.Fatalf("the fork at %d shares %d messages (%v); want %d", tc.at, f.BaseAt, err, tc.want)
		}
	}
	if _, err := Fork(ctx, store, "c", 1001); !errors.Is(err, history.ErrInsideRound) {
		t.Fatalf("a fork at 1001 (after the answer whose call has no result) gave %v; want history.ErrInsideRound", err)
	}
	if store.Wholes != 0 {
		t.Fatalf("the forks read the conversation of %d messages whole %d times; want none (only the messages around each point)", len(msgs), store.Wholes)
	}
}
