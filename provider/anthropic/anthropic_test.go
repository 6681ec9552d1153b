package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

var update = flag.Bool("update", false, "rewrite the golden request files")

func marshal(t *testing.T, req provider.Request) []byte {
	t.Helper()
	b, err := Body(req, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The request bytes for a known conversation, pinned.
func TestRequestBytesArePinned(t *testing.T) {
	got := marshal(t, providertest.SampleRequest())
	providertest.Golden(t, "testdata/request.golden.json", got, *update)
	if again := marshal(t, providertest.SampleRequest()); string(again) != string(got) {
		t.Fatal("two builds of the same request differ")
	}
}

func messages(t *testing.T, req provider.Request) []map[string]any {
	t.Helper()
	var v struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(marshal(t, req), &v); err != nil {
		t.Fatal(err)
	}
	return v.Messages
}

func TestTextResultGoesInTheStringFormOfContent(t *testing.T) {
	msgs := messages(t, providertest.SampleRequest())
	res := msgs[2]["content"].([]any)[0].(map[string]any)
	if res["type"] != "tool_result" || res["content"] != "line \"one\"\n\ttwo <&>\n" {
		t.Fatalf("tool_result = %v", res)
	}
	if _, ok := res["is_error"]; ok {
		t.Fatal("a success carries is_error")
	}
}

func TestErrorResultCarriesIsError(t *testing.T) {
	msgs := messages(t, providertest.SampleRequest())
	res := msgs[4]["content"].([]any)[0].(map[string]any)
	if res["is_error"] != true || res["content"] != "missing does not exist in the workspace" {
		t.Fatalf("tool_result = %v", res)
	}
}

func TestImageGoesNatively(t *testing.T) {
	msgs := messages(t, providertest.SampleRequest())
	res := msgs[2]["content"].([]any)[1].(map[string]any)
	content := res["content"].([]any)
	img := content[1].(map[string]any)
	src := img["source"].(map[string]any)
	if img["type"] != "image" || src["type"] != "base64" || src["media_type"] != "image/png" || src["data"] != "iVBORw==" {
		t.Fatalf("image block = %v", img)
	}
	if content[0].(map[string]any)["text"] != "[image: image/png, 4 bytes]" {
		t.Fatalf("text beside the image = %v", content[0])
	}
}

func countMarks(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["cache_control"]; ok {
			n++
		}
		for _, x := range v {
			n += countMarks(x)
		}
	case []any:
		for _, x := range v {
			n += countMarks(x)
		}
	}
	return n
}

func TestCacheBreakpointsOnTheStablePrefixAndRolling(t *testing.T) {
	var v map[string]any
	_ = json.Unmarshal(marshal(t, providertest.SampleRequest()), &v)
	if n := countMarks(v); n != 4 {
		t.Fatalf("%d cache breakpoints, want 4", n)
	}
	tools := v["tools"].([]any)
	if _, ok := tools[len(tools)-1].(map[string]any)["cache_control"]; !ok {
		t.Fatal("the last tool is not marked")
	}
	if _, ok := v["system"].([]any)[0].(map[string]any)["cache_control"]; !ok {
		t.Fatal("the system prompt is not marked")
	}
	msgs := v["messages"].([]any)
	last := func(i int) map[string]any {
		c := msgs[i].(map[string]any)["content"].([]any)
		return c[len(c)-1].(map[string]any)
	}
	for _, i := range []int{2, 4} {
		if _, ok := last(i)["cache_control"]; !ok {
			t.Fatalf("user message %d is not marked", i)
		}
	}
	if _, ok := last(0)["cache_control"]; ok {
		t.Fatal("an old user message is marked")
	}
	// a long conversation still has at most 4
	req := providertest.SampleRequest()
	for i := 0; i < 10; i++ {
		req.Messages = append(req.Messages, req.Messages[1], req.Messages[2])
	}
	_ = json.Unmarshal(marshal(t, req), &v)
	if n := countMarks(v); n > 4 {
		t.Fatalf("%d cache breakpoints", n)
	}
}

func newProvider(t *testing.T, srv *providertest.Server, noStream bool) *Provider {
	t.Helper()
	p, err := New(Config{APIKey: "test-key", BaseURL: srv.URL, NoStream: noStream, MaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompleteStreamsTextToolCallsAndUsage(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewAnthropic(t, providertest.Step{
			Text:      "Let me look — ok.",
			ToolCalls: []providertest.ToolCall{{ID: "toolu_9", Name: "workspace--read", Input: `{"path": "a.txt"}`}},
			Input:     12, Output: 34, CacheRead: 56, CacheWrite: 78,
		})
		var streamed strings.Builder
		resp, err := newProvider(t, srv, noStream).Complete(context.Background(), providertest.SampleRequest(), func(s string) { streamed.WriteString(s) })
		if err != nil {
			t.Fatal(err)
		}
		if streamed.String() != "Let me look — ok." {
			t.Fatalf("streamed %q", streamed.String())
		}
		m := resp.Message
		if len(m.Parts) != 2 || m.Parts[0].Text != "Let me look — ok." || m.Parts[1].CallID != "toolu_9" || strings.ReplaceAll(string(m.Parts[1].Input), " ", "") != `{"path":"a.txt"}` {
			t.Fatalf("message %+v", m)
		}
		if *m.Usage != (history.Usage{Input: 12, Output: 34, CacheRead: 56, CacheWrite: 78}) || resp.StopReason != "tool_use" {
			t.Fatalf("usage %+v stop %q", *m.Usage, resp.StopReason)
		}
		// the body sent is the bytes Body builds, exactly
		want, err := Body(providertest.SampleRequest(), !noStream)
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[0]; string(got) != string(want) {
			t.Fatalf("sent %s\nwant %s", got, want)
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestFourHundredsAreReportedAtOnceWithTheProvidersMessage(t *testing.T) {
	srv := providertest.NewAnthropic(t, providertest.Step{Status: 400, ErrorMessage: "max_tokens: too large"})
	_, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "max_tokens: too large") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests for a 400", n)
	}
}

func TestOverloadAndServerErrorsAreRetried(t *testing.T) {
	srv := providertest.NewAnthropic(t,
		providertest.Step{Status: 429},
		providertest.Step{Status: 529},
		providertest.Step{Status: 503},
		providertest.Step{Text: "finally"})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
	if err != nil || resp.Message.Parts[0].Text != "finally" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Fatalf("%d requests", n)
	}
}

func TestMalformedStreamIsAnError(t *testing.T) {
	for name, step := range map[string]providertest.Step{
		"not JSON":         {Raw: "event: message_start\ndata: {not json\n\n"},
		"closed midway":    {Raw: strings.Split(providertest.AnthropicStream(providertest.Step{Text: "hello there"}), "event: message_delta")[0], Cut: true},
		"no stop":          {Raw: strings.Split(providertest.AnthropicStream(providertest.Step{Text: "hello there"}), "event: message_stop")[0]},
		"error mid-stream": {Raw: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewAnthropic(t, step)
			if _, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestInvalidUTF8FromTheProviderIsMadeWellFormed(t *testing.T) {
	stream := providertest.AnthropicStream(providertest.Step{Text: "ok"})
	stream = strings.Replace(stream, `"text":"o"`, "\"text\":\"o\xff\xfe\"", 1)
	srv := providertest.NewAnthropic(t, providertest.Step{Raw: stream})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if txt := resp.Message.Parts[0].Text; !strings.HasPrefix(txt, "o\uFFFD") || !strings.HasSuffix(txt, "k") {
		t.Fatalf("text %q", txt)
	}
}

func TestToolInputThatIsNotJSONIsKeptForTheAgent(t *testing.T) {
	srv := providertest.NewAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "t1", Name: "x", Input: `{"path": "a`}}})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Message.Parts[0]
	if p.Input != nil || p.Text != `{"path": "a` {
		t.Fatalf("part %+v", p)
	}
}

func TestNoKeyNamesTheVariable(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "set ANTHROPIC_API_KEY") {
		t.Fatalf("err = %v", err)
	}
}

// The SDK's typed params for the same messages: the reference the direct
// encoder must match.
func sdkBlocks(m history.Message) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, part := range m.Parts {
		switch part.Type {
		case history.TextPart:
			if part.Text != "" {
				out = append(out, sdk.NewTextBlock(part.Text))
			}
		case history.ToolCallPart:
			input := part.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			out = append(out, sdk.NewToolUseBlock(part.CallID, input, part.Name))
		case history.ToolResultPart:
			out = append(out, toolResult(part))
		}
	}
	return out
}

// toolResult is a tool_result block: the text in the string form of content,
// or, with images, a text block and native image blocks.
func toolResult(part history.Part) sdk.ContentBlockParamUnion {
	b := sdk.ToolResultBlockParam{ToolUseID: part.CallID}
	if part.IsError {
		b.IsError = param.NewOpt(true)
	}
	if len(part.Images) == 0 {
		b.SetExtraFields(map[string]any{"content": part.Text})
		return sdk.ContentBlockParamUnion{OfToolResult: &b}
	}
	if part.Text != "" {
		b.Content = append(b.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: part.Text}})
	}
	for _, img := range part.Images {
		b.Content = append(b.Content, sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{
			Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
				Data:      base64.StdEncoding.EncodeToString(img.Data),
				MediaType: sdk.Base64ImageSourceMediaType(img.MIMEType),
			}},
		}})
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &b}
}

func setCacheControl(b *sdk.ContentBlockParamUnion, cc sdk.CacheControlEphemeralParam) {
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = cc
	case b.OfImage != nil:
		b.OfImage.CacheControl = cc
	}
}

func TestEncodedMessagesMatchTheSDKsShapes(t *testing.T) {
	req := providertest.SampleRequest()
	got := messages(t, req)
	for i, m := range req.Messages {
		blocks := sdkBlocks(m)
		var want sdk.MessageParam
		if m.Role == history.Assistant {
			want = sdk.NewAssistantMessage(blocks...)
		} else {
			want = sdk.NewUserMessage(blocks...)
		}
		raw, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var wantV map[string]any
		_ = json.Unmarshal(raw, &wantV)
		a, b := mustJSON(providertest.StripCacheMarks(got[i])), mustJSON(wantV)
		if a != b {
			t.Errorf("message %d:\n got %s\nwant %s", i, a, b)
		}
	}
}

func TestAnEmptyAnswerIsNotSentAndItsNeighboursMerge(t *testing.T) {
	req := providertest.SampleRequest()
	req.Messages = []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hello"}}},
		{Role: history.Assistant},
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "anyone?"}}},
	}
	msgs := messages(t, req)
	if len(msgs) != 1 || len(msgs[0]["content"].([]any)) != 2 {
		t.Fatalf("messages %v", msgs)
	}
}
