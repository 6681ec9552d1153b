package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// newThinkingRig is an Anthropic rig whose provider asks for thinking and
// whose fake refuses, as the API does, a request that drops or changes
// the thinking blocks it sent.
func newThinkingRig(t *testing.T, noStream bool) *rig {
	r := newRig(t)
	r.srv.CheckThinking = true
	r.provider = func(url string) (provider.Provider, error) {
		return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: noStream,
			Thinking: anthropic.Thinking{Budget: 2048, Interleaved: true}})
	}
	r.agent = r.newAgent()
	return r
}

// sentBlock is a thinking block as the fake sent it, in the API's shape.
func sentBlock(th providertest.Thinking) string {
	if th.Redacted != "" {
		return `{"type":"redacted_thinking","data":"` + th.Redacted + `"}`
	}
	return `{"type":"thinking","thinking":"` + th.Text + `","signature":"` + th.Signature + `"}`
}

func TestThinkingBlocksSurviveAToolLoopAndARestartByteForByte(t *testing.T) {
	first := []providertest.Thinking{
		{Text: "The user wants a.txt and b.txt.", Signature: "EqQBsig1"},
		{Redacted: "EmwKAhgBEgy3va3p"},
		{Text: "Now b.txt, after a.txt.", Signature: "EqQBsig2", BeforeCall: 1}, // interleaved: between the calls
	}
	second := []providertest.Thinking{{Text: "Both read; a.txt once more.", Signature: "EqQBsig3"}} // after the results
	third := []providertest.Thinking{{Text: "Done; answer.", Signature: "EqQBsig4"}}
	afterRestart := []providertest.Thinking{{Text: "A new turn.", Signature: "EqQBsig5"}}
	for _, noStream := range []bool{false, true} {
		name := "streamed"
		if noStream {
			name = "not streamed"
		}
		t.Run(name, func(t *testing.T) {
			r := newThinkingRig(t, noStream)
			r.write("a.txt", "alpha\n")
			r.write("b.txt", "beta\n")
			r.srv.Push(
				providertest.Step{Thinking: first, Text: "Reading both.", ToolCalls: []providertest.ToolCall{readCall("toolu_a", "a.txt"), readCall("toolu_b", "b.txt")}},
				providertest.Step{Thinking: second, ToolCalls: []providertest.ToolCall{readCall("toolu_c", "a.txt")}},
				providertest.Step{Thinking: third, Text: "alpha and beta"},
			)
			tr, events := r.turn("read a.txt and b.txt")
			if tr.Reason != "end_turn" || tr.Text != "alpha and beta" || tr.Rounds != 2 {
				t.Fatalf("turn %+v", tr)
			}
			var thought strings.Builder
			for _, e := range events {
				if e.Kind == Thinking {
					thought.WriteString(e.Text)
				}
				if e.Kind == TextDelta && strings.Contains(e.Text, "user wants") {
					t.Fatal("thinking came as answer text")
				}
			}
			if want := first[0].Text + first[2].Text + second[0].Text + third[0].Text; thought.String() != want {
				t.Fatalf("thinking events %q, want %q", thought.String(), want)
			}
			// stored in the order they came, as the API sent them
			msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
			var kinds []string
			for _, p := range msgs[1].Parts {
				kinds = append(kinds, string(p.Type))
			}
			if got := strings.Join(kinds, ","); got != "reasoning,reasoning,text,tool_call,reasoning,tool_call" {
				t.Fatalf("the first answer is stored as %s", got)
			}
			if p := msgs[1].Parts[0]; p.Wire != anthropic.Wire || p.Text != first[0].Text || string(p.Raw) != sentBlock(first[0]) {
				t.Fatalf("stored %+v, raw %s", p, p.Raw)
			}
			if p := msgs[1].Parts[1]; p.Text != "" || string(p.Raw) != sentBlock(first[1]) {
				t.Fatalf("redacted thinking stored %+v, raw %s", p, p.Raw)
			}
			// every later request carries every block, byte for byte (the
			// fake refused none: it compares each signature)
			reqs := r.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			for _, th := range first {
				for _, i := range []int{1, 2} {
					if !strings.Contains(string(reqs[i]), sentBlock(th)) {
						t.Fatalf("request %d lacks %s", i, sentBlock(th))
					}
				}
			}
			if !strings.Contains(string(reqs[2]), `{"role":"assistant","content":[`+sentBlock(second[0])+`,{"type":"tool_use","id":"toolu_c"`) {
				t.Fatalf("request 2 lacks the interleaved thinking before its call:\n%s", reqs[2])
			}
			// after a restart: the same request bytes, and the next turn's
			// requests still carry every block
			build := func(a *Agent) string {
				req, err := a.Request(context.Background(), r.id)
				if err != nil {
					t.Fatal(err)
				}
				b, err := anthropic.BodyWith(req, !noStream, anthropic.Thinking{Budget: 2048, Interleaved: true})
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			before := build(r.agent)
			r.agent = r.newAgent()
			if after := build(r.agent); after != before {
				t.Fatalf("the request differs after a restart:\n%s\n%s", before, after)
			}
			r.srv.Push(providertest.Step{Thinking: afterRestart, ToolCalls: []providertest.ToolCall{readCall("toolu_d", "b.txt")}}, providertest.Step{Text: "beta again"})
			if tr, _ := r.turn("b.txt again"); tr.Text != "beta again" {
				t.Fatalf("turn after the restart %+v", tr)
			}
			last := string(r.srv.Requests()[4])
			for _, th := range append(append(append(append([]providertest.Thinking{}, first...), second...), third...), afterRestart...) {
				if !strings.Contains(last, sentBlock(th)) {
					t.Fatalf("the request after the restart lacks %s", sentBlock(th))
				}
			}
		})
	}
}

// dropsReasoning is a provider that loses the reasoning parts of the
// request before sending it: what the fake must refuse.
type dropsReasoning struct{ provider.Provider }

func (d dropsReasoning) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	msgs := make([]history.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Parts = nil
		for _, p := range req.Messages[i].Parts {
			if p.Type != history.ReasoningPart {
				m.Parts = append(m.Parts, p)
			}
		}
		msgs[i] = m
	}
	req.Messages = msgs
	return d.Provider.Complete(ctx, req, onText)
}

func TestAToolLoopThatDropsThinkingIsRefusedAsTheAPIRefusesIt(t *testing.T) {
	r := newThinkingRig(t, false)
	r.agent.Provider = dropsReasoning{r.agent.Provider}
	r.write("a.txt", "alpha\n")
	r.srv.Push(providertest.Step{Thinking: []providertest.Thinking{{Text: "Read it.", Signature: "sig"}}, ToolCalls: []providertest.ToolCall{readCall("toolu_a", "a.txt")}},
		providertest.Step{Text: "never"})
	_, err := r.agent.Turn(context.Background(), r.id, "read a.txt", nil)
	if err == nil || !strings.Contains(err.Error(), "a final `assistant` message must start with a thinking block") {
		t.Fatalf("err = %v", err)
	}
}

func TestAnAnswerCutWhileItThoughtLeavesTheConversationValid(t *testing.T) {
	r := newThinkingRig(t, false)
	// message_start, the thinking's start and its first delta, then the
	// connection drops
	r.srv.Push(providertest.Step{Thinking: []providertest.Thinking{{Text: "Let me think this through.", Signature: "sig"}}, Text: "never", CutAfter: 3})
	var thought strings.Builder
	_, err := r.agent.Turn(context.Background(), r.id, "think", func(e Event) {
		if e.Kind == Thinking {
			thought.WriteString(e.Text)
		}
	})
	if err == nil || thought.Len() == 0 {
		t.Fatalf("err = %v, thought %q", err, thought.String())
	}
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	if last := msgs[len(msgs)-1]; !last.Cut || len(last.Parts) != 1 || last.Parts[0].Text != NoTextMarker {
		t.Fatalf("the cut answer is stored as %+v", last)
	}
	r.srv.Push(providertest.Step{Thinking: []providertest.Thinking{{Text: "Again.", Signature: "sig2"}}, Text: "here"})
	if tr, _ := r.turn("again"); tr.Text != "here" {
		t.Fatalf("turn %+v", tr)
	}
}
