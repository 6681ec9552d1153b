package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// guarded is a rig whose agent has the refusal guard on.
func guarded(t *testing.T, wire string, extra ...*tool.Tool) *rig {
	r := newWireRig(t, wire, extra...)
	r.agent.RefusalGuard = true
	return r
}

// messagesOf is request i's conversation member, decoded, cache marks
// stripped.
func (r *rig) messagesOf(i int) []any {
	messages, _ := members(r.wire)
	return providertest.StripCacheMarks(r.srv.Request(i)[messages]).([]any)
}

func (r *rig) stored() []history.Message {
	r.t.Helper()
	msgs, err := r.agent.Store.Messages(context.Background(), r.id)
	if err != nil {
		r.t.Fatal(err)
	}
	return msgs
}

// refusalStops are the stop reasons each wire's fake refuses with.
var refusalStops = map[string]string{"anthropic": "refusal", "bedrock": "refusal", "vertex": "refusal", "google-cloud": "refusal",
	"openai": "content_filter", "openai-responses": "content_filter", "gemini": "safety"}

func TestTheRefusalGuardWithholdsARefusedRoundAndSendsTheRequestAgain(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			r := guarded(t, wire)
			r.write("a.txt", "alpha\nbeta\n")
			r.write("b.txt", "gamma\n")
			r.srv.Push(
				providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt"), readCall("call_2", "b.txt")}},
				providertest.Step{Text: "I will not", Refuse: true},
				providertest.Step{Text: "done without them"},
			)
			tr, events := r.turn("read them")
			wantTurn(t, tr, TurnResult{Reason: "end_turn", Text: "done without them", Rounds: 1})
			if n := len(r.srv.Requests()); n != 3 {
				t.Fatalf("%d requests, want 3", n)
			}
			first, again := r.sentResults(1), r.sentResults(2)
			if len(first) != 2 || !strings.Contains(first[0].text, "alpha") {
				t.Fatalf("the refused request carried %+v", first)
			}
			if len(again) != 2 {
				t.Fatalf("the request sent again carried %+v", again)
			}
			for i, res := range again {
				path := ".myelin/tool-results/withheld-" + res.callID + ".txt"
				must(t, fmt.Sprintf("result %d sent again as %q", i, res.text),
					want{strings.Contains(res.text, "withheld after a refusal"), "it to say it was withheld after a refusal"},
					want{strings.Contains(res.text, "The tool has already run"), "it to say the tool has already run"},
					want{strings.Contains(res.text, path), "it to name " + path})
				kept, err := os.ReadFile(filepath.Join(r.dir, path))
				if err != nil || string(kept) != first[i].text {
					t.Fatalf("the withheld file %s holds %q (%v), want the original %q", path, kept, err, first[i].text)
				}
			}
			// The refused answer is not sent: the request is the refused
			// one with the results replaced, message for message.
			if a, b := r.messagesOf(1), r.messagesOf(2); len(a) != len(b) {
				t.Fatalf("the request sent again has %d messages, the refused one %d", len(b), len(a))
			}
			// The history keeps the originals, then the guard's record
			// with the refused answer, then the answer.
			msgs := r.stored()
			if len(msgs) != 5 {
				t.Fatalf("stored %d messages, want 5: %+v", len(msgs), msgs)
			}
			must(t, fmt.Sprintf("stored %+v", msgs),
				want{msgs[2].Parts[0].Text == first[0].text, "the first result as it was sent"},
				want{msgs[3].Role == history.Context, "the guard's record fourth"},
				want{msgs[4].Role == history.Assistant, "the answer last"})
			e := msgs[3].Edit
			if e == nil || e.Refusal == nil || len(e.Cleared) != 2 {
				t.Fatalf("the guard's record %+v: want an edit holding the refusal that clears 2 results", e)
			}
			must(t, fmt.Sprintf("the guard's record %+v (refusal %+v)", e, e.Refusal),
				want{e.Refusal.Stop == refusalStops[wire], fmt.Sprintf("the refusal's stop reason %q", refusalStops[wire])},
				want{e.Refusal.Text == "I will not", "the refused answer's text"},
				want{e.Cleared[0].Msg == 2, "the results of message 2 cleared"},
				want{e.Cleared[0].Text == again[0].text, "the placeholder sent again"})
			var said bool
			for _, ev := range events {
				said = said || ev.Kind == ContextEdit && ev.Edit != nil && ev.Edit.Refusal != nil && strings.Contains(ev.Text, "refusal guard withheld the round's 2 results")
			}
			if !said {
				t.Fatalf("no ContextEdit event says the results were withheld: %+v", events)
			}
		})
	}
}

func TestARestartSendsTheWithheldPlaceholdersByteForByte(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			r := guarded(t, wire)
			r.write("a.txt", "alpha\n")
			r.srv.Push(
				providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}},
				providertest.Step{Text: "no", Refuse: true},
				providertest.Step{Text: "ok"},
				providertest.Step{Text: "second turn, same process"},
			)
			r.turn("read it")
			r.turn("and now?")
			unbroken := r.srv.Request(3)
			// the same conversation, read by a restarted process
			r.srv.Push(providertest.Step{Text: "after the restart"})
			r.agent = r.newAgent()
			r.agent.RefusalGuard = true
			req, err := r.agent.Request(context.Background(), r.id)
			if err != nil {
				t.Fatal(err)
			}
			// the stored turn two ends the rebuilt request; the unbroken
			// request 3 is its prefix
			messages, _ := members(wire)
			before, _ := json.Marshal(providertest.StripCacheMarks(unbroken[messages]))
			if !strings.Contains(string(before), "withheld after a refusal") || strings.Contains(string(before), "alpha") {
				t.Fatalf("the unbroken process sent %s", before)
			}
			if len(req.Messages) != 6 || req.Messages[2].Parts[0].Text != r.stored()[3].Edit.Cleared[0].Text {
				t.Fatalf("rebuilt request %+v", req.Messages)
			}
			r.turn("and after a restart?")
			after := r.messagesOf(4)
			b, _ := json.Marshal(after[:len(providertest.StripCacheMarks(unbroken[messages]).([]any))])
			if string(before) != string(b) {
				t.Fatalf("after the restart the earlier messages changed:\n%s\n%s", before, b)
			}
		})
	}
}

func TestASecondRefusalEndsTheTurnAndItsCallsAreNotRun(t *testing.T) {
	var runs atomic.Int32
	touch := tool.MustFunc("note--touch", "Counts its runs.", func(ctx context.Context, in struct{}) (any, error) {
		runs.Add(1)
		return "touched", nil
	})
	r := guarded(t, "anthropic", touch)
	r.srv.Push(
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "note--touch", Input: `{}`}}},
		providertest.Step{Text: "no", Refuse: true},
		providertest.Step{Text: "still no", Refuse: true, ToolCalls: []providertest.ToolCall{{ID: "call_2", Name: "note--touch", Input: `{}`}}},
	)
	tr, events := r.turn("touch it")
	wantTurn(t, tr, TurnResult{Reason: RefusedTwice, Text: "still no", Rounds: tr.Rounds})
	if n := len(r.srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3: one retry only", n)
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want 1: a refused answer's calls are not run", runs.Load())
	}
	msgs := r.stored()
	last := msgs[len(msgs)-1]
	must(t, fmt.Sprintf("the second refusal is stored as %+v", last),
		want{last.Role == history.Assistant, "the assistant's message"},
		want{len(last.ToolCalls()) == 0, "no tool calls (they were not run)"},
		want{textOf(last) == "still no", `its text "still no"`})
	var said string
	for _, e := range events {
		if e.Kind == Notice {
			said += e.Text
		}
	}
	if !strings.Contains(said, `refused again (stop reason "refusal")`) || !strings.Contains(said, "the turn ends") {
		t.Fatalf("notices %q", said)
	}
	// The conversation stays valid and goes on; the results stay withheld.
	r.srv.Push(providertest.Step{Text: "fine"})
	r.turn("something else then")
	if res := r.sentResults(3); len(res) != 0 {
		t.Fatalf("results after the prompt? %+v", res)
	}
	body, _ := json.Marshal(r.messagesOf(3))
	if strings.Contains(string(body), `"touched"`) || !strings.Contains(string(body), "withheld after a refusal") {
		t.Fatalf("the next turn sent %s", body)
	}
}

func TestWithoutTheGuardARefusalEndsTheTurnAsAnyAnswer(t *testing.T) {
	r := newRig(t)
	r.write("a.txt", "alpha\n")
	r.srv.Push(
		providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}},
		providertest.Step{Text: "no", Refuse: true},
	)
	tr, _ := r.turn("read it")
	if n := len(r.srv.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2: a refusal is not sent again without the guard", n)
	}
	wantTurn(t, tr, TurnResult{Reason: "refusal", Text: "no", Rounds: tr.Rounds})
	for _, m := range r.stored() {
		if m.Role == history.Context {
			t.Fatalf("a record was stored: %+v", m.Edit)
		}
	}
}

func TestARefusedPromptIsNotGuarded(t *testing.T) {
	r := guarded(t, "anthropic")
	r.srv.Push(providertest.Step{Text: "no", Refuse: true})
	tr, _ := r.turn("something it refuses")
	if tr.Reason != "refusal" || len(r.srv.Requests()) != 1 {
		t.Fatalf("turn %+v after %d requests: a prompt has no results to withhold", tr, len(r.srv.Requests()))
	}
}

func TestAWithheldSpilledResultNamesItsSpillFileAndAnErrorStaysAnError(t *testing.T) {
	big := tool.MustFunc("big--output", "Prints a lot.", func(ctx context.Context, in struct{}) (any, error) {
		return strings.Repeat("a line of output\n", 5000), nil
	})
	r := guarded(t, "anthropic", big)
	r.srv.Push(
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_big", Name: "big--output", Input: `{}`}, readCall("call_missing", "missing.txt")}},
		providertest.Step{Refuse: true},
		providertest.Step{Text: "ok"},
	)
	r.turn("go")
	spill := r.stored()[2].Parts[0].SpillPath
	sent := r.toolResults(2)
	if spill == "" || !strings.Contains(sent[0]["content"].(string), "kept whole in the workspace file "+spill+".]") {
		t.Fatalf("spilled to %q; sent %q", spill, sent[0]["content"])
	}
	if text := sent[1]["content"].(string); !strings.HasPrefix(text, "[myelin: this error result") || sent[1]["is_error"] != true {
		t.Fatalf("the error result sent as %v", sent[1])
	}
	if e := r.stored()[3].Edit; e.Refusal.Text != "" || e.Cleared[0].Path != spill {
		t.Fatalf("record %+v", e)
	}
}

func TestWithheldResultSaysWhatWasWithheldAndWhere(t *testing.T) {
	for _, c := range []struct {
		name    string
		chars   int
		isError bool
		path    string
		images  []string
		whyNot  string
		want    []string
	}{
		{"a result in a file", 12, false, ".myelin/tool-results/withheld-c.txt", nil, "",
			[]string{"[myelin: this tool result (12 characters) was withheld after a refusal", "The tool has already run", "kept whole in the workspace file .myelin/tool-results/withheld-c.txt.]"}},
		{"an error", 3, true, "p.txt", nil, "", []string{"this error result (3 characters)"}},
		{"images", 5, false, "p.txt", []string{"p-1.png"}, "", []string{"in the workspace file p.txt, and its images in p-1.png.]"}},
		{"no file", 5, false, "", nil, "there is no workspace", []string{"could not be kept in a workspace file (there is no workspace); the conversation's history keeps it.]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := WithheldResult(c.chars, c.isError, c.path, c.images, c.whyNot)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Fatalf("%q lacks %q", got, w)
				}
			}
			if strings.Contains(got, "workspace--read") {
				t.Fatalf("%q offers a ready call to read what the model refused", got)
			}
		})
	}
}

// geminiBlocked is Gemini's answer to a prompt it blocks: no candidate,
// the reason in promptFeedback (streamed: one event).
const geminiBlocked = "data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\",\"blockReasonMessage\":\"blocked\"},\"usageMetadata\":{\"promptTokenCount\":10}}\n\n"

func TestAPromptGeminiBlocksAfterARoundIsMetAsARefusal(t *testing.T) {
	r := guarded(t, "gemini")
	r.write("a.txt", "alpha\n")
	r.srv.Push(
		providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}},
		providertest.Step{Raw: geminiBlocked},
		providertest.Step{Text: "ok"},
	)
	tr, _ := r.turn("read it")
	if tr.Reason != "end_turn" || tr.Text != "ok" {
		t.Fatalf("turn %+v", tr)
	}
	if got := r.sentResults(2); len(got) != 1 || !strings.Contains(got[0].text, "withheld after a refusal") {
		t.Fatalf("sent again %+v", got)
	}
	if e := r.stored()[3].Edit; e == nil || e.Refusal == nil {
		t.Fatalf("record %+v: want an edit holding the refusal", r.stored()[3])
	} else if e.Refusal.Stop != "prohibited_content" {
		t.Fatalf("the refusal's stop reason %q, want prohibited_content", e.Refusal.Stop)
	}
}

func TestAPromptGeminiBlocksWithNoResultsIsTheErrorItIs(t *testing.T) {
	r := guarded(t, "gemini")
	r.srv.Push(providertest.Step{Raw: geminiBlocked})
	_, err := r.agent.Turn(context.Background(), r.id, "something", nil)
	if err == nil || !strings.Contains(err.Error(), "the prompt was blocked (PROHIBITED_CONTENT)") {
		t.Fatalf("err %v", err)
	}
	if n := len(r.srv.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestAPromptGeminiBlocksTwiceEndsTheTurn(t *testing.T) {
	r := guarded(t, "gemini")
	r.write("a.txt", "alpha\n")
	r.srv.Push(
		providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}},
		providertest.Step{Raw: geminiBlocked},
		providertest.Step{Raw: geminiBlocked},
	)
	tr, _ := r.turn("read it")
	if tr.Reason != RefusedTwice {
		t.Fatalf("turn %+v", tr)
	}
	// The turn has ended: continuing it sends nothing.
	if tr, err := r.agent.Continue(context.Background(), r.id, nil); err != nil || tr.Reason != AlreadyEnded {
		t.Fatalf("continue: %+v, %v", tr, err)
	}
	r.srv.Push(providertest.Step{Text: "fine"})
	if tr, _ := r.turn("something else"); tr.Text != "fine" {
		t.Fatalf("the next turn %+v", tr)
	}
}

// With KeepRequests, the refused request is kept as refused (no answer at
// its place: Msg -1, a note saying so, its usage), then the request sent
// again with its answer.
func TestTheRefusedRequestIsKeptAsRefused(t *testing.T) {
	r := guarded(t, "anthropic")
	r.agent.KeepRequests = true
	r.write("a.txt", "alpha\n")
	r.srv.Push(
		providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}, Input: 5, Output: 1},
		providertest.Step{Refuse: true, Input: 7, Output: 2},
		providertest.Step{Text: "ok", Input: 8, Output: 3},
	)
	tr, _ := r.turn("read it")
	if tr.Usage.Input != 20 {
		t.Fatalf("the turn's usage %+v does not count the refused request", tr.Usage)
	}
	log := r.agent.Store.(history.Requests)
	ctx := context.Background()
	refused, err := log.Request(ctx, r.id, 2)
	if err != nil {
		t.Fatalf("the refused request: %v", err)
	}
	must(t, fmt.Sprintf("the refused request kept as %+v", refused),
		want{refused.Msg == -1, "no answer's place (-1)"},
		want{refused.Usage != nil && refused.Usage.Input == 7, "its usage, 7 input tokens"},
		want{strings.Contains(refused.Error, "refusal guard withheld"), "its error to say the guard withheld the results"})
	again, err := log.Request(ctx, r.id, 3)
	if err != nil {
		t.Fatalf("the request sent again: %v", err)
	}
	must(t, fmt.Sprintf("the request sent again kept as %+v", again),
		want{again.Msg == 4, "its answer's place 4"},
		want{again.Error == "", "no error"},
		want{string(again.Body) == string(r.srv.Requests()[2]), "the body the provider got"})
}
