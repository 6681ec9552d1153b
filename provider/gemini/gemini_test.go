package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

var update = flag.Bool("update", false, "rewrite the golden request files")

var sig1 = base64.StdEncoding.EncodeToString([]byte("signature one"))
var sig2 = base64.StdEncoding.EncodeToString([]byte("signature two"))

// sampleRequest is providertest's sample as Gemini's tests send it: the
// answer's own reasoning and another wire's before its text, its calls'
// ids as Gemini's answers give them (a call of its own, signed; one named
// by the wire, localPrefix), and one more exchange after the failed call.
func sampleRequest() provider.Request {
	r := providertest.SampleRequest()
	r.Model = "gemini-2.5-flash"
	local := localPrefix + "0011223344556677"
	answer, results := r.Messages[1].Parts, r.Messages[2].Parts
	answer[1].CallID, answer[1].Wire, answer[1].Signature = "call_1", "gemini", sig1
	answer[2].CallID, results[0].CallID, results[1].CallID = local, "call_1", local
	r.Messages[1].Parts = append([]history.Part{
		{Type: history.ReasoningPart, Wire: "gemini", Text: "Reading it.", Raw: json.RawMessage(`{"text":"Reading it.","thought":true}`)},
		{Type: history.ReasoningPart, Wire: "anthropic", Text: "not mine", Raw: json.RawMessage(`{"type":"thinking","thinking":"not mine","signature":"x"}`)},
	}, answer...)
	failed := &r.Messages[3].Parts[0]
	failed.CallID, failed.Wire, failed.Signature = "call_3", "gemini", sig2
	r.Messages[4].Parts[0].CallID = "call_3"
	r.Messages = append(r.Messages,
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "It is missing.", Wire: "gemini", Signature: sig1}}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "thanks"}}},
	)
	return r
}

func body(t *testing.T, req provider.Request) []byte {
	t.Helper()
	b, err := Body(req, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The request bytes for a known conversation, pinned: for a model that
// takes images in function responses and for one that does not.
func TestRequestBytesArePinned(t *testing.T) {
	for _, tc := range []struct{ model, golden string }{
		{"gemini-2.5-flash", "testdata/request.golden.json"},
		{"gemini-3-flash-preview", "testdata/request-gemini3.golden.json"},
	} {
		req := sampleRequest()
		req.Model = tc.model
		got := body(t, req)
		providertest.Golden(t, tc.golden, got, *update)
		if again := body(t, req); string(again) != string(got) {
			t.Fatal("two builds of the same request differ")
		}
	}
}

type sentPart struct {
	Text             *string         `json:"text"`
	Thought          bool            `json:"thought"`
	ThoughtSignature string          `json:"thoughtSignature"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse *struct {
		ID       string         `json:"id"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
		Parts    []struct {
			InlineData struct{ Data, MimeType string } `json:"inlineData"`
		} `json:"parts"`
	} `json:"functionResponse"`
	InlineData *struct{ Data, MimeType string } `json:"inlineData"`
}

type sentContent struct {
	Role  string     `json:"role"`
	Parts []sentPart `json:"parts"`
}

func contents(t *testing.T, b []byte) []sentContent {
	t.Helper()
	var v struct {
		Contents []sentContent `json:"contents"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.Contents
}

func TestAFunctionResponseCarriesTheTextVerbatimUnderOutputOrError(t *testing.T) {
	cs := contents(t, body(t, sampleRequest()))
	ok := cs[2].Parts[0].FunctionResponse
	if ok == nil || ok.Name != "workspace--read" || ok.ID != "call_1" || len(ok.Response) != 1 || ok.Response["output"] != "line \"one\"\n\ttwo <&>\n" {
		t.Fatalf("result sent as %+v", cs[2].Parts[0])
	}
	bad := cs[4].Parts[0].FunctionResponse
	if len(bad.Response) != 1 || bad.Response["error"] != "missing does not exist in the workspace" {
		t.Fatalf("error result sent as %+v", bad)
	}
	// a call id the wire made up is not sent, on the call nor its response
	local := cs[2].Parts[1].FunctionResponse
	if local.ID != "" || local.Name != "workspace--read" || strings.Contains(string(cs[1].Parts[3].FunctionCall), localPrefix) {
		t.Fatalf("a local id was sent: %+v %s", local, cs[1].Parts[3].FunctionCall)
	}
}

func TestImagesGoInTheFunctionResponseWhereTheModelTakesThemElseAfter(t *testing.T) {
	req := sampleRequest()
	cs := contents(t, body(t, req))
	parts := cs[2].Parts
	if len(parts) != 4 || len(parts[1].FunctionResponse.Parts) != 0 || *parts[2].Text != "[image 1 of tool call "+localPrefix+"0011223344556677]" ||
		parts[3].InlineData == nil || parts[3].InlineData.Data != "iVBORw==" || parts[3].InlineData.MimeType != "image/png" {
		t.Fatalf("gemini-2.5: %+v", parts)
	}
	req.Model = "gemini-3-pro-preview"
	parts = contents(t, body(t, req))[2].Parts
	if len(parts) != 2 || len(parts[1].FunctionResponse.Parts) != 1 || parts[1].FunctionResponse.Parts[0].InlineData.Data != "iVBORw==" {
		t.Fatalf("gemini-3: %+v", parts)
	}
	if parts[1].FunctionResponse.Response["output"] != "[image: image/png, 4 bytes]" {
		t.Fatalf("gemini-3: the placeholder text is not the output: %+v", parts[1].FunctionResponse)
	}
}

func TestSignaturesAndThoughtsAreSentBackAndOtherWiresReasoningIsNot(t *testing.T) {
	b := body(t, sampleRequest())
	cs := contents(t, b)
	model := cs[1].Parts
	if len(model) != 4 {
		t.Fatalf("the model content has %d parts: %+v", len(model), model)
	}
	if !model[0].Thought || *model[0].Text != "Reading it." || model[2].ThoughtSignature != sig1 || model[3].ThoughtSignature != "" {
		t.Fatalf("model parts %+v", model)
	}
	if cs[5].Parts[0].ThoughtSignature != sig1 {
		t.Fatalf("the text's signature was not sent: %+v", cs[5])
	}
	if strings.Contains(string(b), "not mine") {
		t.Fatal("another wire's reasoning was sent")
	}
	// a signature of another wire's is not sent either
	req := sampleRequest()
	req.Messages[5].Parts[0].Wire = "openai-responses"
	if contents(t, body(t, req))[5].Parts[0].ThoughtSignature != "" {
		t.Fatal("a signature of another wire was sent")
	}
}

func TestRecordsAndEmptyAnswersAreNotSent(t *testing.T) {
	req := sampleRequest()
	with := req
	with.Messages = append([]history.Message{}, req.Messages[:2]...)
	with.Messages = append(with.Messages, history.Message{Role: history.Assistant}, history.Message{Role: history.User, Edit: &history.Edit{}})
	with.Messages = append(with.Messages, req.Messages[2:]...)
	if string(body(t, with)) != string(body(t, req)) {
		t.Fatal("a record or an empty answer changed the request")
	}
}

func TestConsecutiveMessagesOfOneRoleGoAsOneContent(t *testing.T) {
	req := sampleRequest()
	req.Messages = append(req.Messages, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and more"}}})
	cs := contents(t, body(t, req))
	last := cs[len(cs)-1]
	if last.Role != "user" || len(last.Parts) != 2 || *last.Parts[1].Text != "and more" {
		t.Fatalf("last content %+v", last)
	}
}

func TestASchemaThatIsNotJSONIsAnErrorNamingTheTool(t *testing.T) {
	req := sampleRequest()
	req.Tools[1].InputSchema = json.RawMessage(`{"type":`)
	if _, err := Body(req, Options{}); err == nil || !strings.Contains(err.Error(), "workspace--write") {
		t.Fatalf("err %v", err)
	}
}

func newWire(t *testing.T, srv *providertest.Server, cfg Config) *Provider {
	t.Helper()
	cfg.APIKey, cfg.BaseURL = "k", srv.URL
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func userTurn(text string) []history.Message {
	return []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: text}}}}
}

func TestStreamedAnswerGivesTextThoughtsCallsSignaturesAndUsage(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewGemini(t, providertest.Step{
			GeminiThought: "Let me look.", Text: "Looking, ünïcode.", GeminiSignature: sig1,
			ToolCalls: []providertest.ToolCall{{ID: "call_a", Name: "workspace--read", Input: `{"path":"a.txt"}`}, {Name: "workspace--read", Input: `{"path":"b.txt"}`}},
			Input:     100, CacheRead: 900, Output: 42,
		})
		p := newWire(t, srv, Config{NoStream: noStream, Thoughts: true})
		var text, thought strings.Builder
		resp, err := p.Complete(context.Background(), provider.Request{Model: "gemini-3-flash-preview", MaxTokens: 100, Messages: userTurn("go"),
			OnThinking: func(s string) { thought.WriteString(s) }}, func(s string) { text.WriteString(s) })
		if err != nil {
			t.Fatal(err)
		}
		if text.String() != "Looking, ünïcode." || thought.String() != "Let me look." {
			t.Fatalf("streamed text %q, thought %q", text.String(), thought.String())
		}
		parts := resp.Message.Parts
		if len(parts) != 4 {
			t.Fatalf("parts %+v", parts)
		}
		if parts[0].Type != history.ReasoningPart || parts[0].Wire != "gemini" || parts[0].Text != "Let me look." || string(parts[0].Raw) != `{"text":"Let me look.","thought":true}` {
			t.Fatalf("thought part %+v (raw %s)", parts[0], parts[0].Raw)
		}
		if parts[1].Type != history.TextPart || parts[1].Text != "Looking, ünïcode." || parts[1].Signature != "" {
			t.Fatalf("text part %+v", parts[1])
		}
		if c := parts[2]; c.CallID != "call_a" || c.Signature != sig1 || c.Wire != "gemini" || string(c.Input) != `{"path":"a.txt"}` {
			t.Fatalf("first call %+v", c)
		}
		if c := parts[3]; !strings.HasPrefix(c.CallID, localPrefix) || c.Signature != "" || c.Name != "workspace--read" {
			t.Fatalf("second call %+v", c)
		}
		if u := *resp.Message.Usage; u != (history.Usage{Input: 100, CacheRead: 900, Output: 42}) {
			t.Fatalf("usage %+v", u)
		}
		if resp.StopReason != "stop" {
			t.Fatalf("stop reason %q", resp.StopReason)
		}
		gen := srv.Request(0)["generationConfig"].(map[string]any)
		if gen["thinkingConfig"].(map[string]any)["includeThoughts"] != true || gen["maxOutputTokens"] != 100.0 {
			t.Fatalf("generationConfig %v", gen)
		}
	}
}

func TestATextAnswersSignatureFromTheStreamsLastChunkIsKeptOnTheText(t *testing.T) {
	srv := providertest.NewGemini(t, providertest.Step{Text: "Done.", GeminiSignature: sig2})
	resp, err := newWire(t, srv, Config{}).Complete(context.Background(), provider.Request{Model: "gemini-3-flash-preview", Messages: userTurn("go")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Message.Parts; len(p) != 1 || p[0].Text != "Done." || p[0].Signature != sig2 || p[0].Wire != "gemini" {
		t.Fatalf("parts %+v", p)
	}
}

// A tool loop against a fake that refuses a request dropping a signature
// it gave: the signatures and the thought go back byte for byte in the
// next request, and in one built after a restart (the stored messages
// read back from their JSON).
func TestSignaturesSurviveAToolLoopAndARestartByteForByte(t *testing.T) {
	srv := providertest.NewGemini(t,
		providertest.Step{GeminiThought: "Plan: read.", GeminiSignature: sig1, ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "It says hi."},
	)
	p := newWire(t, srv, Config{Thoughts: true})
	req := provider.Request{Model: "gemini-3-flash-preview", Messages: userTurn("read a.txt")}
	resp, err := p.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, resp.Message, history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c1", Text: "hi"}}})
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	sent := string(srv.Requests()[1])
	if !strings.Contains(sent, `{"text":"Plan: read.","thought":true},{"functionCall":{"args":{"path":"a.txt"},"id":"c1","name":"workspace--read"},"thoughtSignature":"`+sig1+`"}`) {
		t.Fatalf("the thought and the signed call were not sent back as they came:\n%s", sent)
	}
	// after a restart: the messages as the store gives them back
	stored, err := json.Marshal(req.Messages)
	if err != nil {
		t.Fatal(err)
	}
	var restarted []history.Message
	if err := json.Unmarshal(stored, &restarted); err != nil {
		t.Fatal(err)
	}
	again := req
	again.Messages = restarted
	rebuilt, err := Body(again, Options{Thoughts: true})
	if err != nil {
		t.Fatal(err)
	}
	if string(rebuilt) != sent {
		t.Fatal("the request built after a restart differs from the one sent")
	}
	// and the fake, like the API, refuses the request that drops it
	dropped := req
	dropped.Messages = append([]history.Message{}, req.Messages...)
	call := dropped.Messages[1]
	call.Parts = append([]history.Part{}, call.Parts...)
	call.Parts[1].Signature = ""
	dropped.Messages[1] = call
	srv.Push(providertest.Step{Text: "unreached"})
	_, err = p.Complete(context.Background(), dropped, nil)
	if err == nil || !strings.Contains(err.Error(), "missing a thought_signature") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a dropped signature gave %v", err)
	}
}

func TestARequestOverTheWindowIsATooLongError(t *testing.T) {
	srv := providertest.NewGemini(t)
	big := strings.Repeat("a long prompt ", 400)
	srv.Window = 100
	_, err := newWire(t, srv, Config{}).Complete(context.Background(), provider.Request{Model: "gemini-3-flash-preview", MaxTokens: 10, Messages: userTurn(big)}, nil)
	tl, ok := provider.IsTooLong(err)
	if !ok {
		t.Fatalf("err %v", err)
	}
	want := providertest.Tokens(srv.Requests()[0])
	if tl.Tokens != want || tl.Limit != 100 || !strings.Contains(err.Error(), "The input token count") {
		t.Fatalf("too long %+v: %v (want %d tokens)", tl, err, want)
	}
}

func TestErrorsKeepTheProvidersMessageAndRetriesRetry(t *testing.T) {
	srv := providertest.NewGemini(t,
		providertest.Step{Status: 429, ErrorMessage: "Resource has been exhausted (e.g. check quota)."},
		providertest.Step{Status: 503, ErrorMessage: "The model is overloaded."},
		providertest.Step{Text: "ok"},
		providertest.Step{Status: 403, ErrorMessage: "Method doesn't allow unregistered callers."},
	)
	p := newWire(t, srv, Config{MaxRetries: 2, RetryDelay: time.Millisecond})
	req := provider.Request{Model: "gemini-3-flash-preview", Messages: userTurn("hi")}
	resp, err := p.Complete(context.Background(), req, nil)
	if err != nil || resp.Message.Parts[0].Text != "ok" {
		t.Fatalf("after two retries: %+v, %v", resp, err)
	}
	_, err = p.Complete(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(), "gemini: 403 Forbidden: Method doesn't allow unregistered callers. (PERMISSION_DENIED)") {
		t.Fatalf("err %v", err)
	}
	if _, ok := provider.IsTooLong(err); ok {
		t.Fatal("a 403 read as too long")
	}
	if n := len(srv.Requests()); n != 4 {
		t.Fatalf("%d requests", n)
	}
}

func TestAStreamCutBeforeItsEndIsAnError(t *testing.T) {
	srv := providertest.NewGemini(t, providertest.Step{Text: "Hello there.", ToolCalls: []providertest.ToolCall{{ID: "c", Name: "x", Input: `{}`}}, CutAfter: 2})
	var shown strings.Builder
	_, err := newWire(t, srv, Config{}).Complete(context.Background(), provider.Request{Model: "m", Messages: userTurn("hi")}, func(s string) { shown.WriteString(s) })
	if err == nil || shown.String() != "Hello there." {
		t.Fatalf("err %v, shown %q", err, shown.String())
	}
}

func TestNewReadsTheKeyAndBaseURLFromTheEnvironment(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "GEMINI_API_KEY") || !strings.Contains(err.Error(), "GOOGLE_API_KEY") {
		t.Fatalf("without a key: %v", err)
	}
	srv := providertest.NewGemini(t, providertest.Step{Text: "a"}, providertest.Step{Text: "b"})
	t.Setenv("GOOGLE_GEMINI_BASE_URL", srv.URL)
	for _, v := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		t.Setenv("GEMINI_API_KEY", "")
		t.Setenv("GOOGLE_API_KEY", "")
		t.Setenv(v, "key-"+v)
		p, err := New(Config{MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(context.Background(), provider.Request{Model: "m", Messages: userTurn("hi")}, nil); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests reached the base URL", n)
	}
}

func TestTooLongReadsGeminisMessages(t *testing.T) {
	for _, tc := range []struct {
		status        int
		msg           string
		tokens, limit int
		ok            bool
	}{
		{400, "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).", 1200293, 1048576, true},
		{400, "the input token count exceeds the maximum number of tokens allowed", 0, 0, true},
		{400, "Request payload size exceeds the limit: 20971520 bytes.", 0, 0, true},
		{413, "", 0, 0, true},
		{400, "Request contains an invalid argument.", 0, 0, false},
		{500, "The input token count (5) exceeds the maximum number of tokens allowed (4).", 0, 0, false},
	} {
		tl := tooLong(tc.status, tc.msg)
		if (tl != nil) != tc.ok || (tl != nil && (tl.Tokens != tc.tokens || tl.Limit != tc.limit)) {
			t.Errorf("%d %q: %+v", tc.status, tc.msg, tl)
		}
	}
}

func TestCacheSettingsSayNothingIsMarked(t *testing.T) {
	p := &Provider{}
	if got := provider.CacheSettings(p); !strings.Contains(got, "implicit") {
		t.Fatalf("%q", got)
	}
	var _ provider.CacheDescriber = p
	_ = errors.New
}
