package openai

import (
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

var update = flag.Bool("update", false, "rewrite the golden request files")

// sampleRequest is providertest's sample as OpenAI's tests send it.
func sampleRequest() provider.Request {
	return providertest.SampleFirstRound("gpt-test", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
}

func marshal(t *testing.T, req provider.Request) []byte {
	t.Helper()
	p, err := Params(req, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRequestBytesArePinned(t *testing.T) {
	got := marshal(t, sampleRequest())
	providertest.Golden(t, "testdata/request.golden.json", got, *update)
	if again := marshal(t, sampleRequest()); string(again) != string(got) {
		t.Fatal("two builds of the same request differ")
	}
}

func TestToolResultsAreToolMessagesWithStringContentAndImagesFollowInAUserMessage(t *testing.T) {
	var v struct {
		Messages []map[string]any `json:"messages"`
	}
	_ = json.Unmarshal(marshal(t, sampleRequest()), &v)
	m := v.Messages
	if len(m) != 6 || m[0]["role"] != "system" || m[1]["content"] != "read a.txt" {
		t.Fatalf("messages %v", m)
	}
	if m[3]["role"] != "tool" || m[3]["tool_call_id"] != "call_1" || m[3]["content"] != "line \"one\"\n\ttwo <&>\n" {
		t.Fatalf("tool message %v", m[3])
	}
	if m[4]["role"] != "tool" || m[4]["content"] != "[image: image/png, 4 bytes]" {
		t.Fatalf("tool message %v", m[4])
	}
	parts := m[5]["content"].([]any)
	img := parts[1].(map[string]any)
	if m[5]["role"] != "user" || img["type"] != "image_url" || img["image_url"].(map[string]any)["url"] != "data:image/png;base64,iVBORw==" {
		t.Fatalf("image message %v", m[5])
	}
	calls := m[2]["tool_calls"].([]any)
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if m[2]["content"] != "Reading." || fn["arguments"] != `{"path":"a.txt"}` || fn["name"] != "workspace--read" {
		t.Fatalf("assistant %v", m[2])
	}
}

func newProvider(t *testing.T, srv *providertest.Server, noStream bool) *Provider {
	t.Helper()
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: noStream, MaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompleteStreamsTextToolCallsAndUsage(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewOpenAI(t, providertest.Step{
			Text:      "Let me look — ok.",
			ToolCalls: []providertest.ToolCall{{ID: "call_9", Name: "workspace--read", Input: `{"path":"a.txt"}`}},
			Input:     12, Output: 34, CacheRead: 56,
		})
		var streamed strings.Builder
		resp, err := newProvider(t, srv, noStream).Complete(context.Background(), sampleRequest(), func(s string) { streamed.WriteString(s) })
		if err != nil {
			t.Fatal(err)
		}
		m := resp.Message
		if streamed.String() != "Let me look — ok." || len(m.Parts) != 2 || m.Parts[1].CallID != "call_9" || string(m.Parts[1].Input) != `{"path":"a.txt"}` {
			t.Fatalf("streamed %q, message %+v", streamed.String(), m)
		}
		if *m.Usage != (history.Usage{Input: 12, Output: 34, CacheRead: 56}) || resp.StopReason != "tool_calls" {
			t.Fatalf("usage %+v, stop %q", *m.Usage, resp.StopReason)
		}
		req := srv.Request(0)
		if !noStream && req["stream_options"].(map[string]any)["include_usage"] != true {
			t.Fatalf("request %v", req)
		}
	}
}

func TestFourHundredsAreReportedAtOnceAndFiveHundredsRetried(t *testing.T) {
	srv := providertest.NewOpenAI(t, providertest.Step{Status: 400, ErrorMessage: "model not found: gpt-x"})
	if _, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil); err == nil || !strings.Contains(err.Error(), "model not found: gpt-x") {
		t.Fatalf("err = %v", err)
	}
	srv = providertest.NewOpenAI(t, providertest.Step{Status: 429}, providertest.Step{Status: 502}, providertest.Step{Text: "ok"})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if err != nil || resp.Message.Parts[0].Text != "ok" || len(srv.Requests()) != 3 {
		t.Fatalf("resp %+v, err %v, %d requests", resp, err, len(srv.Requests()))
	}
}

func TestMalformedOrCutStreamIsAnError(t *testing.T) {
	full := providertest.OpenAIStream(providertest.Step{Text: "hello"})
	for name, step := range map[string]providertest.Step{
		"not JSON":      {Raw: "data: {not json\n\n"},
		"closed midway": {Raw: strings.Split(full, `"finish_reason":"stop"`)[0], Cut: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewOpenAI(t, step)
			if _, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestArgumentsThatAreNotJSONAreKeptForTheAgent(t *testing.T) {
	srv := providertest.NewOpenAI(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "x", Input: `{"a":`}}})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Message.Parts[0]; p.Input != nil || p.Text != `{"a":` {
		t.Fatalf("part %+v", p)
	}
}

func TestNoKeyNamesTheVariable(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "set OPENAI_API_KEY") {
		t.Fatalf("err = %v", err)
	}
}

func TestInvalidUTF8FromTheProviderIsMadeWellFormed(t *testing.T) {
	stream := strings.Replace(providertest.OpenAIStream(providertest.Step{Text: "ok"}), `"content":"ok"`, "\"content\":\"o\xff\xfek\"", 1)
	srv := providertest.NewOpenAI(t, providertest.Step{Raw: stream})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if txt := resp.Message.Parts[0].Text; !utf8.ValidString(txt) || !strings.HasPrefix(txt, "o\uFFFD") || !strings.HasSuffix(txt, "k") {
		t.Fatalf("text %q", txt)
	}
}

func TestAnEmptyAnswerIsNotSent(t *testing.T) {
	req := sampleRequest()
	req.Messages = []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hello"}}},
		{Role: history.Assistant},
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "anyone?"}}},
	}
	var v struct {
		Messages []map[string]any `json:"messages"`
	}
	_ = json.Unmarshal(marshal(t, req), &v)
	if len(v.Messages) != 3 || v.Messages[1]["content"] != "hello" || v.Messages[2]["content"] != "anyone?" {
		t.Fatalf("messages %v", v.Messages)
	}
}

func TestTheAnswersLimitIsNamedForTheEndpoint(t *testing.T) {
	for base, field := range map[string]string{
		"":                             "max_completion_tokens",
		"https://api.openai.com/v1":    "max_completion_tokens",
		"https://openrouter.ai/api/v1": "max_tokens",
		"http://localhost:11434/v1":    "max_tokens",
	} {
		srv := providertest.NewOpenAI(t, providertest.Step{Text: "ok"})
		p, err := New(Config{APIKey: "k", BaseURL: base})
		if err != nil {
			t.Fatal(err)
		}
		// send to the fake whatever the base says
		target, err := Target(provider.Endpoint{APIKey: "k", BaseURL: srv.URL}, path)
		if err != nil {
			t.Fatal(err)
		}
		p.send = Sender(target, nil, 0, Limits{Wire: "openai"})
		if _, err := p.Complete(context.Background(), sampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
		req := srv.Request(0)
		other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[field]
		if req[field] != 1024.0 || req[other] != nil {
			t.Errorf("base %q: sent %v / %v", base, req[field], req[other])
		}
	}
}

func sdkClientFor(url string) sdk.Client {
	return sdk.NewClient(option.WithAPIKey("k"), option.WithBaseURL(url), option.WithMaxRetries(0))
}
