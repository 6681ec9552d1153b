package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// roundConversation stores conversation "c": a prompt (message 1), an
// answer with a tool call (2), its result (3), the final answer (4); with
// inFlight, a second prompt (5) and an answer whose call has no result
// yet (6), as while its round runs.
func roundConversation(t *testing.T, inFlight bool) history.Store {
	t.Helper()
	ctx := context.Background()
	store := &history.Memory{}
	if err := store.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	call := func(id string) history.Message {
		return history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: id, Name: "agent--delegate", Input: []byte(`{"task":"x"}`)}}}
	}
	msgs := []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "first"}}},
		call("call_1"),
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_1", Text: "done"}}},
		{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "answered"}}},
	}
	if inFlight {
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "second"}}}, call("call_2"))
	}
	if err := store.Append(ctx, "c", msgs...); err != nil {
		t.Fatal(err)
	}
	return store
}

// A fork at a point inside a round (after an answer with tool calls,
// before their results) would leave the fork's next turn a round to
// recover: its calls run again or answered "interrupted". It is refused,
// naming the points on either side (issue 30, review M1).
func TestAForkInsideARoundIsRefusedNamingThePointsAround(t *testing.T) {
	store := roundConversation(t, false)
	_, err := Fork(context.Background(), store, "c", 2)
	if !errors.Is(err, history.ErrInsideRound) {
		t.Fatalf("a fork at 2 (after the answer with a call, before its result) gave %v, want an error wrapping history.ErrInsideRound", err)
	}
	if !strings.Contains(err.Error(), "give 1 (before the answer) or 3 (after its results)") {
		t.Fatalf("the error %q does not name the points 1 and 3 on either side of the round", err)
	}
	for _, at := range []int{0, 1, 3, 4} {
		if _, err := Fork(context.Background(), store, "c", at); err != nil {
			t.Fatalf("a fork at %d, between rounds, failed: %v", at, err)
		}
	}
}

// A fork at the end by default while a round is in flight forks before
// the answer whose calls run, which has no results yet; an explicit
// point there is refused.
func TestAForkAtTheEndWhileARoundRunsForksBeforeItsAnswer(t *testing.T) {
	ctx := context.Background()
	store := roundConversation(t, true)
	id, err := Fork(ctx, store, "c", -1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if f.BaseAt != 5 || f.Messages != 5 {
		t.Fatalf("the fork at the end of a conversation whose round runs took point %d (%d messages), want 5: before the answer whose call has no result", f.BaseAt, f.Messages)
	}
	_, err = Fork(ctx, store, "c", 6)
	if !errors.Is(err, history.ErrInsideRound) || !strings.Contains(err.Error(), "give 5 (before the answer)") {
		t.Fatalf("a fork at 6, after an answer whose call has no result yet, gave %v, want ErrInsideRound naming point 5", err)
	}
}
