package openai

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// Answers of OpenAI-compatible servers that are not OpenAI's, in the
// shapes their recorded traffic has.

func chunkSSE(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}` + "\n\n"
}

func TestCallsWithoutAnIDGetLocalOnesThatAreSentBackAsTheirIDs(t *testing.T) {
	// Gemini's OpenAI-compatible endpoint sends "id":"", some local servers
	// no id at all, others the same id for two calls: each call gets its own.
	stream := chunkSSE(`{"role":"assistant","tool_calls":[{"index":0,"id":"","type":"function","function":{"name":"workspace--read","arguments":"{\"path\":\"a\"}"}}]}`, "") +
		chunkSSE(`{"tool_calls":[{"index":1,"type":"function","function":{"name":"workspace--read","arguments":"{\"path\":\"b\"}"}}]}`, "") +
		chunkSSE(`{"tool_calls":[{"index":2,"id":"call_0","type":"function","function":{"name":"workspace--read","arguments":"{\"path\":\"c\"}"}}]}`, "") +
		chunkSSE(`{"tool_calls":[{"index":3,"id":"call_0","type":"function","function":{"name":"workspace--read","arguments":"{\"path\":\"d\"}"}}]}`, "tool_calls") +
		"data: [DONE]\n\n"
	srv := providertest.NewOpenAI(t, providertest.Step{Raw: stream})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 4 {
		t.Fatalf("%d calls, want 4: %+v", len(calls), resp.Message.Parts)
	}
	seen := map[string]bool{}
	for i, c := range calls {
		if c.CallID == "" || seen[c.CallID] {
			t.Fatalf("call %d has the id %q, empty or another call's (%+v)", i, c.CallID, calls)
		}
		seen[c.CallID] = true
	}
	if calls[2].CallID != "call_0" || !strings.HasPrefix(calls[0].CallID, localPrefix) || !strings.HasPrefix(calls[3].CallID, localPrefix) {
		t.Fatalf("ids %q %q %q %q: the server's own kept where it is unique, local ones otherwise", calls[0].CallID, calls[1].CallID, calls[2].CallID, calls[3].CallID)
	}
	req := sampleRequest()
	results := history.Message{Role: history.User}
	for _, c := range calls {
		results.Parts = append(results.Parts, history.Part{Type: history.ToolResultPart, CallID: c.CallID, Text: "r"})
	}
	req.Messages = append(req.Messages, resp.Message, results)
	b := body(t, req)
	for _, c := range calls {
		if !bytes.Contains(b, []byte(`{"id":"`+c.CallID+`"`)) || !bytes.Contains(b, []byte(`"tool_call_id":"`+c.CallID+`"`)) {
			t.Fatalf("the call %s is not sent back as its call's id and its result's tool_call_id:\n%s", c.CallID, b)
		}
	}
	if bytes.Contains(b, []byte(`"id":""`)) || bytes.Contains(b, []byte(`"tool_call_id":""`)) {
		t.Fatalf("an empty id was sent:\n%s", b)
	}
}

// magistral is a Mistral reasoning model's stream: thinking parts, then
// text parts, each a list in delta.content.
var magistral = chunkSSE(`{"role":"assistant","content":""}`, "") +
	chunkSSE(`{"content":[{"type":"thinking","thinking":[{"type":"text","text":"It's a greeting"}]}]}`, "") +
	chunkSSE(`{"content":[{"type":"thinking","thinking":[{"type":"text","text":", I should return one."}]}]}`, "") +
	chunkSSE(`{"content":[{"type":"text","text":"Hello"}]}`, "") +
	chunkSSE(`{"content":[{"type":"text","text":" there."},{"type":"reference","reference_ids":[1]}]}`, "") +
	chunkSSE(`{"content":""}`, "stop") +
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}` + "\n\ndata: [DONE]\n\n"

func TestContentAsAListOfPartsIsReadTextAsTextAndThinkingAsReasoning(t *testing.T) {
	srv := providertest.NewOpenAI(t, providertest.Step{Raw: magistral})
	var text, thought strings.Builder
	req := sampleRequest()
	req.OnThinking = func(s string) { thought.WriteString(s) }
	resp, err := newProvider(t, srv, false).Complete(context.Background(), req, func(s string) { text.WriteString(s) })
	if err != nil {
		t.Fatalf("a stream of content parts: %v", err)
	}
	if text.String() != "Hello there." || thought.String() != "It's a greeting, I should return one." {
		t.Fatalf("streamed text %q, thinking %q", text.String(), thought.String())
	}
	p := resp.Message.Parts
	if len(p) != 2 || p[0].Type != history.ReasoningPart || p[0].Text != "It's a greeting, I should return one." || len(p[0].Raw) != 0 ||
		p[1].Type != history.TextPart || p[1].Text != "Hello there." || resp.StopReason != "stop" {
		t.Fatalf("parts %+v, stop %q", p, resp.StopReason)
	}
	// the reasoning is the model's, for people: not sent back
	req.Messages = append(req.Messages, resp.Message)
	if b := body(t, req); bytes.Contains(b, []byte("greeting")) || !bytes.Contains(b, []byte("Hello there.")) {
		t.Fatalf("next body:\n%s", b)
	}
}

func TestContentAsAListOfPartsIsReadNotStreamedToo(t *testing.T) {
	raw := `{"id":"c1","object":"chat.completion","model":"magistral","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},{"type":"text","text":"Hi."}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	srv := providertest.NewOpenAI(t, providertest.Step{Raw: raw})
	resp, err := newProvider(t, srv, true).Complete(context.Background(), sampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Message.Parts
	if len(p) != 2 || p[0].Text != "hm" || p[1].Text != "Hi." {
		t.Fatalf("parts %+v", p)
	}
}

func TestAnAnswerOfOnlyPartsTheWireDoesNotReadIsAnErrorThatCountsThem(t *testing.T) {
	stream := chunkSSE(`{"content":[{"type":"image_url","image_url":{"url":"data:,"}},{"type":"image_url"},{"type":"audio"}]}`, "stop") + "data: [DONE]\n\n"
	srv := providertest.NewOpenAI(t, providertest.Step{Raw: stream})
	_, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if err == nil || !strings.Contains(err.Error(), `1 "audio", 2 "image_url"`) {
		t.Fatalf("err %v; want one naming the parts passed over", err)
	}
}

func body(t *testing.T, req provider.Request) []byte {
	t.Helper()
	b, err := Body(req, false, true)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
