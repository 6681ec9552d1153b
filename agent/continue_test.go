package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

func prompt(s string) history.Message {
	return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

func answer(s string) history.Message {
	return history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

func calls(ids ...string) history.Message {
	m := history.Message{Role: history.Assistant}
	for _, id := range ids {
		m.Parts = append(m.Parts, history.Part{Type: history.ToolCallPart, CallID: id, Name: "workspace--write", Input: []byte(`{}`)}) // not run again on recovery
	}
	return m
}

func results(ids ...string) history.Message {
	m := history.Message{Role: history.User}
	for _, id := range ids {
		m.Parts = append(m.Parts, history.Part{Type: history.ToolResultPart, CallID: id, Text: "r"})
	}
	return m
}

// Where the last turn stands is read from the stored messages alone: a
// final answer after its prompt ends it, its rounds are counted from its
// prompt, and the round limit's answer ends it.
func TestContinuingReadsWhereTheLastTurnStands(t *testing.T) {
	edit := history.Message{Role: history.Context}
	for _, tc := range []struct {
		name   string
		msgs   []history.Message
		ended  bool
		rounds int
		text   string
	}{
		{"only the prompt", []history.Message{prompt("a")}, false, 0, ""},
		{"a prompt after an ended turn", []history.Message{prompt("a"), answer("x"), prompt("b")}, false, 0, ""},
		{"a final answer", []history.Message{prompt("a"), calls("1"), results("1"), answer("done")}, true, 1, "done"},
		{"a final answer before a record", []history.Message{prompt("a"), answer("done"), edit}, true, 0, "done"},
		{"results to go on from", []history.Message{prompt("a"), answer("x"), prompt("b"), calls("1"), results("1"), calls("2"), results("2")}, false, 2, ""},
		{"the round limit's answer", []history.Message{prompt("a"), calls("1"), results("1"), calls("2"), results("2"), calls("3"), results("3")}, true, 3, ""},
		{"no prompt", nil, true, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, ended := continuing(tc.msgs, 2)
			if ended != tc.ended {
				t.Fatalf("continuing = %+v, ended %v; want ended %v", tr, ended, tc.ended)
			}
			wanted := TurnResult{Rounds: tc.rounds, Text: tc.text, Reason: tr.Reason}
			if ended {
				wanted.Reason = AlreadyEnded
			}
			wantTurn(t, tr, wanted)
		})
	}
}

// A turn whose prompt was stored by someone else is run by Continue
// without a second prompt; a Continue after it ended sends nothing.
func TestContinueRunsAStoredPromptOnceAndThenDoesNothing(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if err := r.agent.Store.Append(ctx, r.id, prompt("queued")); err != nil {
		t.Fatal(err)
	}
	r.write("a.txt", "alpha\n")
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("c1", "a.txt")}}, providertest.Step{Text: "read it"})
	tr, err := r.agent.Continue(ctx, r.id, nil)
	if err != nil {
		t.Fatalf("Continue: %v", err)
	}
	wantTurn(t, tr, TurnResult{Reason: "end_turn", Rounds: 1, Text: "read it"})
	msgs, _ := r.agent.Store.Messages(ctx, r.id)
	if len(msgs) != 4 || msgs[0].Parts[0].Text != "queued" {
		t.Fatalf("stored %d messages: %+v", len(msgs), msgs)
	}
	tr, err = r.agent.Continue(ctx, r.id, nil)
	if err != nil {
		t.Fatalf("second Continue: %v", err)
	}
	if n := len(r.srv.Requests()); n != 2 {
		t.Fatalf("the second Continue sent a request: %d in all, want the first turn's 2", n)
	}
	wantTurn(t, tr, TurnResult{Reason: AlreadyEnded, Rounds: 1, Text: "read it"})
}

// A turn whose process died mid-round is continued: the round's call is
// answered as interrupted and the turn goes on to its answer.
func TestContinueAfterADeadProcessAnswersItsCallsAndGoesOn(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if err := r.agent.Store.Append(ctx, r.id, prompt("queued"), calls("c1")); err != nil {
		t.Fatal(err)
	}
	r.srv.Push(providertest.Step{Text: "went on"})
	tr, err := r.agent.Continue(ctx, r.id, nil)
	if err != nil {
		t.Fatalf("Continue: %v", err)
	}
	wantTurn(t, tr, TurnResult{Reason: "end_turn", Rounds: 1, Text: "went on"})
	res := r.toolResults(0)
	if len(res) != 1 {
		t.Fatalf("%d results sent, want 1: %v", len(res), res)
	}
	must(t, fmt.Sprintf("results sent %v", res),
		want{res[0]["tool_use_id"] == "c1", "c1's result"},
		want{res[0]["content"] == Interrupted, "the Interrupted text"})
}
