package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
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

// withBranch gives conversation id (of twoTurns) a branch, id~1, and
// leaves it reading as before: rewound to 2, switched back.
func (f *fixture) withBranch(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	b := f.store
	if _, err := b.Rewind(ctx, id, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Switch(ctx, id, id+"~1"); err != nil {
		t.Fatal(err)
	}
	if got := f.texts(t, id); got != "a|A|b|B" {
		t.Fatalf("the conversation after a rewind and a switch back reads %q", got)
	}
}

// A rewind, undo, redo or switch while background work of the
// conversation runs or waits — a background script running, a wake
// waiting for its turn — is a 409 saying so, and nothing moves: the
// work would go on about calls the move takes out of the history (review
// S4).
func TestAMoveWhileBackgroundWorkRunsOrWaitsIs409(t *testing.T) {
	f, id, _ := twoTurns(t)
	f.withBranch(t, id)
	env := result.Env{Store: f.srv.Workspace}
	m, err := background.New(background.Config{Script: script.Config{Tools: f.srv.Agent.Tools, Env: env}, Root: f.srv.Workspace.Dir(), Env: env, Waker: f.srv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	f.srv.Background = m
	if res := m.Start(tool.WithConversation(context.Background(), id), "await sleep(3600000)", 0); res.IsError {
		t.Fatalf("starting a script: %v", res.Data)
	}
	moves := []struct{ path, body string }{{"/rewind", `{"at":2}`}, {"/undo", ""}, {"/redo", ""}, {"/switch", `{"branch":"` + id + `~1"}`}}
	refused := func(what string) {
		t.Helper()
		for _, mv := range moves {
			status, body := f.do("POST", "/v1/conversations/"+id+mv.path, mv.body)
			if status != http.StatusConflict || !strings.Contains(string(body), "background work running or waiting ("+what) {
				t.Errorf("POST %s while %s: %d %s; want 409 naming it", mv.path, what, status, body)
			}
		}
		if got := f.texts(t, id); got != "a|A|b|B" {
			t.Fatalf("the conversation after the refused moves reads %q", got)
		}
	}
	refused("background script ")
	for _, b := range m.List(id) {
		if _, err := m.Cancel(id, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	c := f.srv.lockedConv(id)
	c.wakes = append(c.wakes, background.Wake{Conversation: id, Script: "bg_x", N: 1, Of: 1, Message: "[wake]"})
	c.mu.Unlock()
	refused("1 wake(s) waiting")
	c.mu.Lock()
	c.wakes = nil
	c.mu.Unlock()
	if status, body := f.do("POST", "/v1/conversations/"+id+"/undo", ""); status != http.StatusOK {
		t.Fatalf("undo once the background work is gone: %d %s", status, body)
	}
}

// files: true on a server with no workspace is refused (501) saying so,
// not answered with an empty report as if nothing needed putting back,
// and nothing moves (review S9).
func TestFilesOnAServerWithNoWorkspaceIs501(t *testing.T) {
	f, id, _ := twoTurns(t)
	f.withBranch(t, id)
	f.srv.Workspace = nil
	for _, mv := range []struct{ path, body string }{{"/rewind", `{"at":2,"files":true}`}, {"/undo", `{"files":true}`}, {"/redo", `{"files":true}`}, {"/switch", `{"branch":"` + id + `~1","files":true}`}} {
		status, body := f.do("POST", "/v1/conversations/"+id+mv.path, mv.body)
		if status != http.StatusNotImplemented || !strings.Contains(string(body), "has no workspace") {
			t.Errorf("POST %s %s with no workspace: %d %s; want 501 saying the server has no workspace", mv.path, mv.body, status, body)
		}
	}
	if got := f.texts(t, id); got != "a|A|b|B" {
		t.Fatalf("the conversation after the refused moves reads %q", got)
	}
}

// A move refused because a branch's own writer holds it says so by what
// the store's HeldError names — the branch, advanced as a conversation of
// its own — not as a turn of the conversation (review S1).
func TestASwitchToABranchItsOwnWriterHoldsSaysSo(t *testing.T) {
	f, id, _ := twoTurns(t)
	if status, body := f.do("POST", "/v1/conversations/"+id+"/undo", ""); status != http.StatusOK {
		t.Fatalf("undo: %d %s", status, body)
	}
	h, err := f.store.Claim(context.Background(), id+"~1", history.NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer f.store.Release(context.Background(), id+"~1", h)
	status, body := f.do("POST", "/v1/conversations/"+id+"/switch", `{"branch":"`+id+`~1"}`)
	if status != http.StatusConflict || !strings.Contains(string(body), "is a branch of "+id+" that its own writer is advancing") {
		t.Fatalf("switch to a branch its own writer holds: %d %s; want 409 saying the branch's own writer holds it", status, body)
	}
}
