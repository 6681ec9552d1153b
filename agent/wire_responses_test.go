package agent

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/provider/responses"
)

func init() {
	testWires["openai-responses"] = testWire{
		server: providertest.NewResponses,
		provider: func(url string) (provider.Provider, error) {
			return responses.New(responses.Config{APIKey: "k", BaseURL: url, MaxRetries: -1})
		},
		results:  responsesResults,
		model:    "gpt-test",
		messages: "input",
		system:   "instructions",
	}
}

// responsesResults are the function_call_output items after the request's
// last function_call item, with the images of their output parts.
func responsesResults(req map[string]any) []sentResult {
	items := req["input"].([]any)
	last := 0
	for j, it := range items {
		if it.(map[string]any)["type"] == "function_call" {
			last = j
		}
	}
	var out []sentResult
	for _, x := range items[last+1:] {
		it := x.(map[string]any)
		if it["type"] != "function_call_output" {
			continue
		}
		sr := sentResult{callID: it["call_id"].(string)}
		switch o := it["output"].(type) {
		case string:
			sr.text = o
		case []any:
			for _, p := range o {
				pm := p.(map[string]any)
				switch pm["type"] {
				case "input_text":
					sr.text = pm["text"].(string)
				case "input_image":
					url := pm["image_url"].(string)
					sr.images = append(sr.images, url[strings.Index(url, ",")+1:])
				}
			}
		}
		out = append(out, sr)
	}
	return out
}

// TestResponsesReasoningSurvivesAToolLoopAndARestartByteForByte: the
// reasoning items of a tool loop are stored as they are sent back, and
// every later request — within the turn, and after a restart — carries
// them byte for byte (the fake refuses one it did not issue or that was
// changed, as the API does); the request built from the store after the
// restart is the one built before it.
func TestResponsesReasoningSurvivesAToolLoopAndARestartByteForByte(t *testing.T) {
	r := newWireRig(t, "openai-responses")
	withSummary := func() {
		p, err := responses.New(responses.Config{APIKey: "k", BaseURL: r.srv.URL, MaxRetries: -1, ReasoningSummary: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		r.agent.Provider = p
	}
	withSummary()
	r.write("a.txt", "alpha\n")
	r.write("b.txt", "beta\n")
	r.srv.Push(
		providertest.Step{Reasoning: "Read a.txt first <then b>.", ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}},
		providertest.Step{Reasoning: "Now b.txt \u2028 too.", ToolCalls: []providertest.ToolCall{readCall("call_2", "b.txt")}},
		providertest.Step{Reasoning: "Both read.", Text: "alpha and beta"})
	tr, events := r.turn("read both")
	if tr.Text != "alpha and beta" || tr.Rounds != 2 {
		t.Fatalf("turn %+v", tr)
	}
	var thought strings.Builder
	for _, e := range events {
		if e.Kind == Thinking {
			thought.WriteString(e.Text)
		}
	}
	// one answer's reasoning after another's (each streamed by its own request)
	if thought.String() != "Read a.txt first <then b>.Now b.txt \u2028 too.Both read." {
		t.Fatalf("thinking events %q", thought.String())
	}
	msgs, err := r.agent.Store.Messages(context.Background(), r.id)
	if err != nil {
		t.Fatal(err)
	}
	var raws [][]byte
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == history.ReasoningPart {
				if p.Wire != responses.Wire || len(p.Raw) == 0 {
					t.Fatalf("stored reasoning %+v", p)
				}
				raws = append(raws, p.Raw)
			}
		}
	}
	if len(raws) != 3 {
		t.Fatalf("%d reasoning parts stored", len(raws))
	}
	reqs := r.srv.Requests()
	for i := 1; i < len(reqs); i++ {
		for _, raw := range raws[:i] {
			if !bytes.Contains(reqs[i], raw) {
				t.Fatalf("request %d does not carry %s byte for byte", i, raw)
			}
		}
	}
	build := func(a *Agent) []byte {
		req, err := a.Request(context.Background(), r.id)
		if err != nil {
			t.Fatal(err)
		}
		b, err := responses.Body(req, responses.Config{ReasoningSummary: "auto"}, true)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := build(r.agent)
	r.agent = r.newAgent()
	withSummary()
	if after := build(r.agent); !bytes.Equal(before, after) {
		t.Fatalf("the request built after the restart differs:\n%s\n%s", before, after)
	}
	r.srv.Push(providertest.Step{Text: "again"})
	r.turn("and again")
	last := r.srv.Requests()[len(reqs)]
	for _, raw := range raws {
		if !bytes.Contains(last, raw) {
			t.Fatalf("after the restart the request does not carry %s byte for byte", raw)
		}
	}
	// the earlier input items go as they went before the restart
	input := func(b []byte) []byte {
		return b[bytes.Index(b, []byte(`"input":[`)):bytes.Index(b, []byte(`],"max_output_tokens"`))]
	}
	if !bytes.HasPrefix(input(last), input(before)) {
		t.Fatalf("after the restart the earlier input is not sent as before:\n%s\n%s", input(before), input(last))
	}
}

func TestResponsesAnAnswerCutMidStreamIsStoredAsFarAsItWent(t *testing.T) {
	r := newWireRig(t, "openai-responses")
	// created, in_progress, item added, part added, the first delta: cut
	r.srv.Push(providertest.Step{Text: "Hello there, world.", CutAfter: 5}, providertest.Step{Text: "again"})
	var shown strings.Builder
	if _, err := r.agent.Turn(context.Background(), r.id, "hi", func(e Event) {
		if e.Kind == TextDelta {
			shown.WriteString(e.Text)
		}
	}); err == nil {
		t.Fatal("a cut stream gave no error")
	}
	if shown.String() != "Hello the" {
		t.Fatalf("streamed %q", shown.String())
	}
	r.turn("go on")
	items := r.srv.Request(1)["input"].([]any)
	if len(items) != 3 {
		t.Fatalf("the next request has %d items: %v", len(items), items)
	}
	answer := items[1].(map[string]any)
	var text strings.Builder
	for _, c := range answer["content"].([]any) { // an output_text part for each stored text part
		text.WriteString(c.(map[string]any)["text"].(string))
	}
	if answer["role"] != "assistant" || text.String() != "Hello the\n\n"+CutMarker {
		t.Fatalf("the cut answer as sent: %v", answer)
	}
}

func TestResponsesARefusalAsTooLongIsMetByMakingRoom(t *testing.T) {
	for _, stream := range []bool{true, false} {
		r := newWireRig(t, "openai-responses", emitTool(t))
		p, err := responses.New(responses.Config{APIKey: "k", BaseURL: r.srv.URL, MaxRetries: -1, NoStream: !stream})
		if err != nil {
			t.Fatal(err)
		}
		r.agent.Provider = p
		r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
		deadConversation(t, r, 12)
		// the fake's window refuses the first request as the API does
		// (streamed: an error event after response.created), and takes
		// the smaller one
		r.srv.Window = 12000
		r.srv.Push(providertest.Step{Text: "back"})
		tr, _ := r.turn("go on again")
		if tr.Text != "back" || r.srv.Refused() != 1 {
			t.Fatalf("stream %v: the turn ended with %q after %d refusals", stream, tr.Text, r.srv.Refused())
		}
		edits := records(t, r.agent, r.id)
		if len(edits) != 1 || len(edits[0].Cleared) == 0 || !strings.Contains(edits[0].Why, "refused") {
			t.Fatalf("stream %v: edits %+v", stream, edits)
		}
	}
}
