package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"reflect"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3/responses"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

var update = flag.Bool("update", false, "rewrite the golden request files")

// ownReasoning is a reasoning item of this wire as stored.
var ownReasoning = Reasoning([]string{"Read the file <first>."}, nil, providertest.Encrypted("Read the file <first>."), true)

// sampleRequest is providertest's sample as OpenAI's tests send it, with
// the key of its conversation and, before the answer's text (in the
// commentary phase), its own reasoning and another wire's.
func sampleRequest() provider.Request {
	r := providertest.SampleFirstRound("gpt-test", `{"type":"object", "properties":{"path":{"type":"string"}},"required":["path"]}`)
	r.CacheKey = "20261203-121500-0a1b2c3d"
	r.Messages[1].Parts = append([]history.Part{
		ownReasoning,
		{Type: history.ReasoningPart, Wire: "anthropic", Text: "not ours", Raw: json.RawMessage(`{"type":"thinking","thinking":"x","signature":"s"}`)},
		Text("Reading.", "commentary"),
	}, r.Messages[1].Parts[1:]...)
	return r
}

func body(t *testing.T, req provider.Request, cfg Config, stream bool) []byte {
	t.Helper()
	b, err := Body(req, cfg, stream)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("the body is not JSON: %s", b)
	}
	return b
}

func TestRequestBytesArePinned(t *testing.T) {
	got := body(t, sampleRequest(), Config{}, true)
	providertest.Golden(t, "testdata/request.golden.json", got, *update)
	if again := body(t, sampleRequest(), Config{}, true); string(again) != string(got) {
		t.Fatal("two builds of the same request differ")
	}
}

func input(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var v struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.Input
}

func TestToolResultsAreFunctionCallOutputsWithTheTextAsAPlainString(t *testing.T) {
	items := input(t, body(t, sampleRequest(), Config{}, false))
	if len(items) != 7 {
		t.Fatalf("%d items: %v", len(items), items)
	}
	if items[0]["role"] != "user" || items[0]["content"] != "read a.txt" {
		t.Fatalf("user message %v", items[0])
	}
	out := items[5]
	if out["type"] != "function_call_output" || out["call_id"] != "call_1" || out["output"] != "line \"one\"\n\ttwo <&>\n" {
		t.Fatalf("tool output %v", out)
	}
	parts, ok := items[6]["output"].([]any)
	if !ok || len(parts) != 2 {
		t.Fatalf("tool output with an image %v", items[6])
	}
	text, img := parts[0].(map[string]any), parts[1].(map[string]any)
	if text["type"] != "input_text" || text["text"] != "[image: image/png, 4 bytes]" || img["type"] != "input_image" || img["image_url"] != "data:image/png;base64,iVBORw==" {
		t.Fatalf("parts %v", parts)
	}
	call := items[3]
	if call["type"] != "function_call" || call["call_id"] != "call_1" || call["name"] != "workspace--read" || call["arguments"] != `{"path":"a.txt"}` || call["id"] != nil {
		t.Fatalf("call %v", call)
	}
	msg := items[2]
	content := msg["content"].([]any)[0].(map[string]any)
	if msg["role"] != "assistant" || content["type"] != "output_text" || content["text"] != "Reading." {
		t.Fatalf("assistant message %v", msg)
	}
	// the text is sent as stored: no \u003c for <, no second quoting
	if !bytes.Contains(body(t, sampleRequest(), Config{}, false), []byte(`"output":"line \"one\"\n\ttwo <&>\n"`)) {
		t.Fatal("the result's text is not in its plain string form")
	}
}

func TestOwnReasoningIsSentBackAsStoredAndAnotherWiresIsNot(t *testing.T) {
	b := body(t, sampleRequest(), Config{}, false)
	if !bytes.Contains(b, []byte(`[{"type":"message","role":"user","content":"read a.txt"},`+string(ownReasoning.Raw)+`,{"type":"message","role":"assistant"`)) {
		t.Fatalf("the reasoning item is not sent byte for byte before what it led to:\n%s", b)
	}
	if bytes.Contains(b, []byte("thinking")) || bytes.Contains(b, []byte("not ours")) {
		t.Fatalf("another wire's reasoning was sent:\n%s", b)
	}
	want := `{"type":"reasoning","summary":[{"type":"summary_text","text":"Read the file <first>."}],"encrypted_content":"` + providertest.Encrypted("Read the file <first>.") + `"}`
	if string(ownReasoning.Raw) != want || ownReasoning.Wire != Wire || ownReasoning.Text != "Read the file <first>." {
		t.Fatalf("stored %+v (raw %s)", ownReasoning, ownReasoning.Raw)
	}
}

func TestReasoningThatLedToNothingOrHasNoEncryptedContentIsNotSent(t *testing.T) {
	for name, parts := range map[string][]history.Part{
		"alone":                {ownReasoning},
		"no encrypted content": {Reasoning([]string{"hm"}, nil, "", false), {Type: history.TextPart, Text: "ok"}},
	} {
		req := sampleRequest()
		req.Messages = []history.Message{
			{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}},
			{Role: history.Assistant, Parts: parts},
		}
		if b := body(t, req, Config{}, false); bytes.Contains(b, []byte(`"type":"reasoning"`)) {
			t.Errorf("%s: sent %s", name, b)
		}
	}
}

func TestTheRequestIsStatelessAndNamesItsConversation(t *testing.T) {
	var v map[string]any
	_ = json.Unmarshal(body(t, sampleRequest(), Config{ReasoningEffort: "low", ReasoningSummary: "auto"}, true), &v)
	if v["store"] != false || v["prompt_cache_key"] != "20261203-121500-0a1b2c3d" || v["stream"] != true || v["max_output_tokens"] != 1024.0 || v["instructions"] != "You are terse." {
		t.Fatalf("request %v", v)
	}
	if inc := v["include"].([]any); len(inc) != 1 || inc[0] != "reasoning.encrypted_content" {
		t.Fatalf("include %v", v["include"])
	}
	if r := v["reasoning"].(map[string]any); r["effort"] != "low" || r["summary"] != "auto" {
		t.Fatalf("reasoning %v", r)
	}
	tool := v["tools"].([]any)[0].(map[string]any)
	if tool["type"] != "function" || tool["name"] != "workspace--read" || tool["strict"] != false || tool["parameters"].(map[string]any)["type"] != "object" {
		t.Fatalf("tool %v", tool)
	}
	var w map[string]any
	_ = json.Unmarshal(body(t, sampleRequest(), Config{NoEncryptedReasoning: true}, false), &w)
	if _, ok := w["include"]; ok {
		t.Fatal("include sent with NoEncryptedReasoning")
	}
}

func TestCacheKeyIsTheKeyOrItsHashWithinTheAPIsLimit(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"20261203-121500-0a1b2c3d", "20261203-121500-0a1b2c3d"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
	} {
		if got := CacheKey(tc.in); got != tc.want {
			t.Errorf("CacheKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, in := range []string{strings.Repeat("a", 65), "my conversation", "é"} {
		got := CacheKey(in)
		if len(got) != 64 || !strings.HasPrefix(got, "myelin-") || got != CacheKey(in) || got == CacheKey(in+"x") {
			t.Errorf("CacheKey(%q) = %q", in, got)
		}
	}
}

// TestEncodedItemsMatchTheSDKsShapes decodes the body with the SDK's own
// request type and encodes it back: every item must be one of the SDK's
// input item shapes, whole, for that to give the same JSON.
func TestEncodedItemsMatchTheSDKsShapes(t *testing.T) {
	b := body(t, sampleRequest(), Config{ReasoningSummary: "auto"}, false)
	var p oai.ResponseNewParams
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Input.OfInputItemList) != 7 {
		t.Fatalf("the SDK read %d input items", len(p.Input.OfInputItemList))
	}
	for i, it := range p.Input.OfInputItemList {
		var kind string
		switch {
		case it.OfMessage != nil:
			kind = "message"
		case it.OfOutputMessage != nil:
			kind = "output message"
		case it.OfReasoning != nil:
			kind = "reasoning"
		case it.OfFunctionCall != nil:
			kind = "function_call"
		case it.OfFunctionCallOutput != nil:
			kind = "function_call_output"
		}
		if kind == "" {
			t.Errorf("item %d is none of the SDK's shapes this wire sends", i)
		}
	}
	again, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var x, y map[string]any
	_ = json.Unmarshal(b, &x)
	_ = json.Unmarshal(again, &y)
	// The one difference allowed: the SDK's reasoning item requires an id,
	// which this wire leaves out on purpose (see Reasoning); it encodes it
	// empty.
	for _, it := range y["input"].([]any) {
		if m := it.(map[string]any); m["type"] == "reasoning" && m["id"] == "" {
			delete(m, "id")
		}
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("the SDK's types do not hold the request:\n ours %s\n sdk  %s", b, again)
	}
}

func newProvider(t *testing.T, srv *providertest.Server, cfg Config) *Provider {
	t.Helper()
	cfg.APIKey, cfg.BaseURL, cfg.MaxRetries = "k", srv.URL, 3
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompleteStreamsTextReasoningToolCallsAndUsage(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewResponses(t, providertest.Step{
			Reasoning: "The user wants a.txt — read it.",
			Text:      "Let me look — ok.",
			ToolCalls: []providertest.ToolCall{{ID: "call_9", Name: "workspace--read", Input: `{"path":"a.txt"}`}},
			Input:     12, Output: 34, CacheRead: 56, CacheWrite: 7,
		})
		var streamed, thought strings.Builder
		req := sampleRequest()
		req.OnThinking = func(s string) { thought.WriteString(s) }
		resp, err := newProvider(t, srv, Config{NoStream: noStream, ReasoningSummary: "auto"}).Complete(context.Background(), req, func(s string) { streamed.WriteString(s) })
		if err != nil {
			t.Fatal(err)
		}
		m := resp.Message
		if streamed.String() != "Let me look — ok." || len(m.Parts) != 3 {
			t.Fatalf("streamed %q, message %+v", streamed.String(), m)
		}
		if !noStream && thought.String() != "The user wants a.txt — read it." {
			t.Fatalf("thinking streamed %q", thought.String())
		}
		r := m.Parts[0]
		want := Reasoning([]string{"The user wants a.txt — read it."}, nil, providertest.Encrypted("The user wants a.txt — read it."), true)
		if r.Type != history.ReasoningPart || r.Wire != Wire || string(r.Raw) != string(want.Raw) || r.Text != want.Text {
			t.Fatalf("reasoning %+v raw %s", r, r.Raw)
		}
		if m.Parts[1].Text != "Let me look — ok." || m.Parts[2].CallID != "call_9" || string(m.Parts[2].Input) != `{"path":"a.txt"}` {
			t.Fatalf("parts %+v", m.Parts)
		}
		if *m.Usage != (history.Usage{Input: 12, Output: 34, CacheRead: 56, CacheWrite: 7}) || resp.StopReason != "tool_calls" {
			t.Fatalf("usage %+v, stop %q", *m.Usage, resp.StopReason)
		}
		if got := srv.Request(0)["stream"]; (got == true) == noStream {
			t.Fatalf("stream %v with NoStream %v", got, noStream)
		}
	}
}

func TestAnAnswerOfTextEndsWithStop(t *testing.T) {
	srv := providertest.NewResponses(t, providertest.Step{Text: "done"})
	resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err != nil || resp.StopReason != "stop" || len(resp.Message.Parts) != 1 {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// TestReasoningRoundTripsByteForByteAcrossAToolLoop plays two rounds of a
// tool loop on the fake, which refuses a reasoning item it did not issue
// or that was changed, as the API does.
func TestReasoningRoundTripsByteForByteAcrossAToolLoop(t *testing.T) {
	srv := providertest.NewResponses(t,
		providertest.Step{Reasoning: "first <thought>", ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Reasoning: "second thought", ToolCalls: []providertest.ToolCall{{ID: "call_2", Name: "workspace--read", Input: `{"path":"b.txt"}`}}},
		providertest.Step{Text: "both read"})
	p := newProvider(t, srv, Config{ReasoningSummary: "auto"})
	req := provider.Request{Model: "gpt-test", MaxTokens: 100, Messages: []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read both"}}}}}
	var raws [][]byte
	for i := range 3 {
		resp, err := p.Complete(context.Background(), req, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		sent := srv.Requests()[i]
		for _, raw := range raws {
			if !bytes.Contains(sent, raw) {
				t.Fatalf("request %d does not carry %s byte for byte:\n%s", i, raw, sent)
			}
		}
		req.Messages = append(req.Messages, resp.Message)
		calls := resp.Message.ToolCalls()
		if len(calls) == 0 {
			break
		}
		raws = append(raws, resp.Message.Parts[0].Raw)
		req.Messages = append(req.Messages, history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: calls[0].CallID, Text: "contents"}}})
	}
	if len(raws) != 2 || len(srv.Requests()) != 3 {
		t.Fatalf("%d reasoning items, %d requests", len(raws), len(srv.Requests()))
	}
	// a changed item is refused, as the API refuses it
	tampered := req
	tampered.Messages = append([]history.Message{}, req.Messages...)
	m := tampered.Messages[1]
	m.Parts = append([]history.Part{}, m.Parts...)
	m.Parts[0].Raw = json.RawMessage(strings.Replace(string(m.Parts[0].Raw), "first", "fist", 1))
	tampered.Messages[1] = m
	srv.Push(providertest.Step{Text: "never"})
	if _, err := p.Complete(context.Background(), tampered, nil); err == nil || !strings.Contains(err.Error(), "invalid_encrypted_content") {
		t.Fatalf("a changed reasoning item was taken: %v", err)
	}
}

func TestFourHundredsAreReportedAtOnceAndFiveHundredsRetried(t *testing.T) {
	srv := providertest.NewResponses(t, providertest.Step{Status: 400, ErrorMessage: "model not found: gpt-x"})
	if _, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil); err == nil || !strings.Contains(err.Error(), "model not found: gpt-x") || len(srv.Requests()) != 1 {
		t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
	}
	srv = providertest.NewResponses(t, providertest.Step{Status: 500}, providertest.Step{Status: 503}, providertest.Step{Text: "ok"})
	resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err != nil || resp.Message.Parts[0].Text != "ok" || len(srv.Requests()) != 3 {
		t.Fatalf("%v after %d requests", err, len(srv.Requests()))
	}
}

func TestACutOrMalformedStreamIsAnError(t *testing.T) {
	for name, step := range map[string]providertest.Step{
		"cut":       {Text: "Hello there", CutAfter: 5},
		"malformed": {Raw: "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":[1,2]}\n\n"},
		"no end":    {Raw: "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[]}}\n\n"},
	} {
		srv := providertest.NewResponses(t, step)
		if _, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestAFailedResponseIsAnErrorWithItsMessage(t *testing.T) {
	raw := "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":3,\"response\":{\"id\":\"r\",\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"server_error\",\"message\":\"The model failed.\"}}}\n\n"
	srv := providertest.NewResponses(t, providertest.Step{Raw: raw})
	_, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err == nil || !strings.Contains(err.Error(), "The model failed.") {
		t.Fatalf("err %v", err)
	}
	if _, ok := provider.IsTooLong(err); ok {
		t.Fatal("a server error read as too long")
	}
}

func TestArgumentsThatAreNotJSONAreKeptForTheAgentAndSentBackAsGiven(t *testing.T) {
	srv := providertest.NewResponses(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path": "a.txt`}}})
	resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := resp.Message.Parts[0]
	if c.Input != nil || c.Text != `{"path": "a.txt` {
		t.Fatalf("call %+v", c)
	}
	req := sampleRequest()
	req.Messages = append(req.Messages, resp.Message)
	if items := input(t, body(t, req, Config{}, false)); items[len(items)-1]["arguments"] != `{"path": "a.txt` {
		t.Fatalf("sent back %v", items[len(items)-1])
	}
}

func TestInvalidUTF8FromTheProviderIsMadeWellFormed(t *testing.T) {
	srv := providertest.NewResponses(t, providertest.Step{Text: "ok \xff\xfe done"})
	var streamed strings.Builder
	resp, err := newProvider(t, srv, Config{NoStream: true}).Complete(context.Background(), sampleRequest(), func(s string) { streamed.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.Parts[0].Text; !strings.Contains(got, "ok ") || strings.Contains(got, "\xff") || streamed.String() != got {
		t.Fatalf("text %q, streamed %q", got, streamed.String())
	}
}

func TestNoKeyNamesTheVariable(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("err %v", err)
	}
}

func TestConsecutiveTextsOfAnAnswerGoInOneMessage(t *testing.T) {
	req := sampleRequest()
	req.Messages = []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}},
		{Role: history.Assistant, Parts: []history.Part{
			{Type: history.TextPart, Text: "Hello"}, {Type: history.TextPart, Text: "\n\n[cut off here]"},
			{Type: history.ToolCallPart, CallID: "c", Name: "n", Input: json.RawMessage(`{}`)},
			{Type: history.TextPart, Text: "after"},
		}},
	}
	b := body(t, req, Config{}, false)
	want := `"input":[{"type":"message","role":"user","content":"hi"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"},{"type":"output_text","text":"\n\n[cut off here]"}]},` +
		`{"type":"function_call","call_id":"c","name":"n","arguments":"{}"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"after"}]}]`
	if !bytes.Contains(b, []byte(want)) {
		t.Fatalf("sent %s", b)
	}
}

func TestAnIncompleteResponseEndsWithItsReason(t *testing.T) {
	raw := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"output_index\":0,\"content_index\":0,\"item_id\":\"m\",\"delta\":\"Half an ans\"}\n\n" +
		"event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":2,\"response\":{\"id\":\"r\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[],\"usage\":{\"input_tokens\":5,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":9,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":14}}}\n\n"
	srv := providertest.NewResponses(t, providertest.Step{Raw: raw})
	resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err != nil || resp.StopReason != "max_output_tokens" || resp.Message.Parts[0].Text != "Half an ans" || resp.Message.Usage.Output != 9 {
		t.Fatalf("%+v, %v", resp, err)
	}
}

func TestAToolSchemaThatIsNotAnObjectIsAnErrorNamingTheTool(t *testing.T) {
	req := sampleRequest()
	req.Tools = []provider.Tool{{Name: "bad--tool", InputSchema: json.RawMessage(`["not","an","object"]`)}}
	if _, err := Body(req, Config{}, false); err == nil || !strings.Contains(err.Error(), "tool bad--tool: its input schema is not a JSON object") {
		t.Fatalf("err %v", err)
	}
}

func TestAnIncompleteResponseWithACallSaysItWasCutNotToolCalls(t *testing.T) {
	raw := "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"c1\",\"name\":\"workspace--write\",\"arguments\":\"\",\"status\":\"in_progress\"}}\n\n" +
		"event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":2,\"output_index\":0,\"item_id\":\"fc\",\"delta\":\"{\\\"path\\\":\\\"a\"}\n\n" +
		"event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":3,\"response\":{\"id\":\"r\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[],\"usage\":{\"input_tokens\":5,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":9,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":14}}}\n\n"
	srv := providertest.NewResponses(t, providertest.Step{Raw: raw})
	resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err != nil || resp.StopReason != "max_output_tokens" {
		t.Fatalf("stop %q, %v; want max_output_tokens, not tool_calls", resp.StopReason, err)
	}
}
