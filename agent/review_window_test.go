package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/window"
)

// One round whose results together are within the round bound (4 × 24,000
// characters) but over the budget of the default window for an unknown
// model (32,768 − 8,192): the last round is never cleared, so the request
// is refused, refused again after "making room", and every later turn dies
// the same way — contract §12: "it never dies of its own size".
func TestALastRoundOverTheBudgetIsClearedAndTheConversationGoesOn(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.srv.Window = 32768 // the default window; model "claude-test" is unknown
	var calls []providertest.ToolCall
	for n := range 4 {
		calls = append(calls, providertest.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: "emit", Input: fmt.Sprintf(`{"n":%d,"chars":23900}`, n)})
	}
	r.srv.Push(providertest.Step{ToolCalls: calls}, providertest.Step{Text: "done"})
	_, err := r.agent.Turn(context.Background(), r.id, "emit four", func(Event) {})
	if err != nil {
		t.Errorf("turn 1: %v (refused %d)", err, r.srv.Refused())
	}
	r.srv.Push(providertest.Step{Text: "ok"})
	if _, err := r.agent.Turn(context.Background(), r.id, "go on", func(Event) {}); err != nil {
		t.Errorf("turn 2 (the conversation is dead): %v", err)
	}
}

// A text-only conversation whose estimate is low (a provider that counts
// more tokens per byte than the calibration says) is refused as too long.
// The refusal's fit has nothing to clear and skips the summary (refused != 0),
// then fails with "it could not be summarised" — no summary was ever asked for.
func TestARefusedConversationOfTextIsSummarised(t *testing.T) {
	r := newRig(t)
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	r.srv.Window = 12000
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("never refused")
		}
		r.srv.Push(providertest.Step{Text: "ok", Input: 300, Output: 1})
		r.srv.Push(providertest.Step{Text: "SUMMARY", Input: 300, Output: 1}, providertest.Step{Text: "after", Input: 300, Output: 1})
		_, err := r.agent.Turn(context.Background(), r.id, strings.Repeat(fmt.Sprintf("prompt %d ", i), 900), func(Event) {})
		if r.srv.Refused() == 0 {
			// drop the two extra steps: re-create by pushing fresh each time is simpler
			continue
		}
		asked := false
		for _, q := range r.srv.Requests() {
			asked = asked || strings.Contains(string(q), "Write that summary now")
		}
		if err != nil {
			t.Fatalf("turn %d after a refusal: %v (a summary was asked for: %v)", i, err, asked)
		}
		return
	}
}

// Edits are keyed by call id alone. A server that reuses call ids across
// rounds (OpenAI-compatible local servers do) gets the newest round's fresh
// result replaced by an old round's placeholder.
func TestAReusedCallIDNeverHidesTheNewestResult(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	for n := range 12 {
		r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "emit", Input: fmt.Sprintf(`{"n":%d,"chars":4000}`, n)}}})
	}
	r.srv.Push(providertest.Step{Text: "done"})
	r.turn("emit them")
	if len(records(t, r.agent, r.id)) == 0 {
		t.Fatal("nothing cleared")
	}
	reqs := r.srv.Requests()
	last := string(reqs[len(reqs)-1])
	if !strings.Contains(last, "result 11 line 0: ") {
		t.Error("the last request does not send the newest round's result (round 11): it was replaced by an older round's placeholder")
	}
}

// Big rounds (each ~2/3 of the budget, within the round bound) with a
// summary that keeps to the size it was asked for: after the first summary,
// every request over the high mark asks for another summary (the previous
// summary plus the placeholders of the round before are "more than the room
// a summary takes"), so a summary request is paid at (almost) every round.
func TestBigRoundsDoNotAskForASummaryAtEveryRound(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 40000, 4096
	r.srv.Window = 40000
	summaries, rounds := 0, 0
	r.srv.Respond = func(q providertest.Request) providertest.Step {
		if strings.Contains(q.LastUserText(), "Write that summary now") {
			summaries++
			return providertest.Step{Text: strings.Repeat("summary words here. ", 650)} // ~13,000 chars, ~2,300 words: as asked
		}
		if rounds < 10 {
			rounds++
			var calls []providertest.ToolCall
			for k := range 4 {
				calls = append(calls, providertest.ToolCall{ID: fmt.Sprintf("call_%d_%d", rounds, k), Name: "emit", Input: fmt.Sprintf(`{"n":%d,"chars":22000}`, rounds*10+k)})
			}
			return providertest.Step{ToolCalls: calls}
		}
		return providertest.Step{Text: "done"}
	}
	_, err := r.agent.Turn(context.Background(), r.id, "go", func(Event) {})
	t.Logf("err=%v rounds=%d summaries=%d refused=%d requests=%d", err, rounds, summaries, r.srv.Refused(), len(r.srv.Requests()))
	if summaries > 3 {
		t.Errorf("%d summary requests in %d rounds", summaries, rounds)
	}
}

// When the workspace cannot take the cleared results' files, clear drops
// the error: nothing is cleared, no event says why, and the turn ends with
// the provider's refusal and "found nothing more to take out".
func TestAResultThatCannotBeWrittenToBeClearedIsSaidSo(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	r.srv.Window = 12000
	os.RemoveAll(filepath.Join(r.dir, ".myelin", "tool-results"))
	if err := os.WriteFile(filepath.Join(r.dir, ".myelin", "tool-results"), []byte("not a dir"), 0o644); err != nil {
		t.Fatal(err)
	}
	for n := range 12 {
		r.srv.Push(emitCall(n, 4000))
	}
	r.srv.Push(providertest.Step{Text: "done"})
	var events []Event
	_, err := r.agent.Turn(context.Background(), r.id, "emit", func(e Event) { events = append(events, e) })
	said := false
	for _, e := range events {
		said = said || e.Kind == Notice && strings.Contains(e.Text, "tool-results")
	}
	if !said {
		t.Errorf("no notice names the workspace failure; the turn ended with: %v", err)
	}
}

// A model that overshoots the summary length it was asked for (its answer
// is bounded only by max_tokens, here 16,000 of a 40,000 window): nothing
// checks the summary's size, so it is stored and stands in every request.
func TestASummaryOverItsRoomIsBoundedAndTheConversationGoesOn(t *testing.T) {
	r := newRig(t)
	r.agent.ContextWindow, r.agent.MaxTokens = 40000, 16000
	r.srv.Window = 40000
	summaries := 0
	r.srv.Respond = func(q providertest.Request) providertest.Step {
		if strings.Contains(q.LastUserText(), "Write that summary now") {
			summaries++
			return providertest.Step{Text: strings.Repeat(fmt.Sprintf("summary %d words here. ", summaries), 2700)} // ~60,000 chars, ~15,000 tokens
		}
		return providertest.Step{Text: "ok"}
	}
	for i := range 30 {
		_, err := r.agent.Turn(context.Background(), r.id, strings.Repeat(fmt.Sprintf("prompt %d ", i), 900), func(Event) {})
		if err != nil {
			t.Fatalf("turn %d: %v (summaries %d, refused %d)", i, err, summaries, r.srv.Refused())
		}
	}
	if summaries > 10 {
		t.Errorf("%d summary requests in 30 turns; want at most one in 3", summaries)
	}
	room := int(float64(40000-16000) * window.SummaryShare)
	for _, e := range records(t, r.agent, r.id) {
		if e.Summary != nil && len(e.Summary.Text) > int(float64(2*room)*window.DefaultBytesPerToken)+400 {
			t.Fatalf("a summary of %d bytes stands in the requests; want it cut at twice its room of %d tokens", len(e.Summary.Text), room)
		}
	}
}

// The provider's refusal names its real window (Limit); the plan ignores it
// and keeps sizing against the configured one, so a too-large
// --context-window (or table entry behind a router) costs a refused request
// again and again.
func TestTheWindowARefusalStatesIsUsedFromThenOn(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 40000, 1000
	r.srv.Window = 20000
	for n := range 40 {
		r.srv.Push(emitCall(n, 4000))
	}
	r.srv.Push(providertest.Step{Text: "done"})
	_, err := r.agent.Turn(context.Background(), r.id, "emit", func(Event) {})
	t.Logf("err=%v refused=%d", err, r.srv.Refused())
	if r.srv.Refused() > 1 {
		t.Errorf("refused %d times: the provider's stated window is not taken into account", r.srv.Refused())
	}
}

func TestALastRoundOverTheBudgetIsClearedOnOpenAI(t *testing.T) {
	r := newWireRig(t, "openai", emitTool(t))
	r.srv.Window = 32768
	var calls []providertest.ToolCall
	for n := range 4 {
		calls = append(calls, providertest.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: "emit", Input: fmt.Sprintf(`{"n":%d,"chars":23900}`, n)})
	}
	r.srv.Push(providertest.Step{ToolCalls: calls}, providertest.Step{Text: "done"})
	if _, err := r.agent.Turn(context.Background(), r.id, "emit four", func(Event) {}); err != nil {
		t.Errorf("turn 1: %v", err)
	}
}
