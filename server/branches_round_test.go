package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// appendRound stores on conversation id a prompt, an answer with a tool
// call, its result and a final answer (messages 1 to 4); with inFlight,
// a second prompt and an answer whose call has no result yet (5, 6).
func (f *fixture) appendRound(t *testing.T, id string, inFlight bool) {
	t.Helper()
	call := func(cid string) history.Message {
		return history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: cid, Name: "agent--delegate", Input: []byte(`{"task":"x"}`)}}}
	}
	msgs := []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "a"}}},
		call("call_1"),
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_1", Text: "done"}}},
		{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "A"}}},
	}
	if inFlight {
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "b"}}}, call("call_2"))
	}
	if err := f.store.Append(context.Background(), id, msgs...); err != nil {
		t.Fatal(err)
	}
}

// A fork or a rewind at a point inside a round is a 400 naming the points
// on either side; a fork without at while a round is in flight is made
// before the answer whose calls run, and base_at says so (review M1).
func TestAForkOrRewindInsideARoundIs400AndAForkAtTheEndTakesTheLastWholePoint(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	f.appendRound(t, id, false)
	for _, path := range []string{"/fork", "/rewind"} {
		status, body := f.do("POST", "/v1/conversations/"+id+path, `{"at":2}`)
		if status != http.StatusBadRequest || !strings.Contains(string(body), "give 1 (before the answer) or 3 (after its results)") {
			t.Errorf("POST %s at 2, inside a round: %d %s; want 400 naming the points 1 and 3", path, status, body)
		}
	}
	if got := f.texts(t, id); got != "a|||A" {
		t.Fatalf("the conversation after the refused rewind reads %q", got)
	}
	f.appendRound(t, id, true)
	status, body := f.do("POST", "/v1/conversations/"+id+"/fork", "")
	var fork ConversationInfo
	mustJSON(t, body, &fork)
	if status != http.StatusCreated || fork.BaseAt != 9 || fork.Messages != 9 {
		t.Fatalf("fork without at while a round is in flight: %d %s; want 201 with base_at 9, before the answer whose call has no result", status, body)
	}
}
