package providertest

import (
	"encoding/json"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// SampleRequest is the request the wires' tests encode and send, a new
// one each call (a test may change it): a system prompt, two tools (the
// first with a closed schema), a first round whose two calls read a file
// (its result with quotes, a tab and <&>) and an image, and a second round
// whose call failed. Its call ids are as Anthropic gives them (toolu_1
// ...); SampleFirstRound is the sample of OpenAI's wires. It is for tests
// only.
func SampleRequest() provider.Request {
	return provider.Request{
		Model:     "claude-test",
		System:    "You are terse.",
		MaxTokens: 1024,
		Tools: []provider.Tool{
			{Name: "workspace--read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
			{Name: "workspace--write", Description: "Write a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`)},
		},
		Messages: []history.Message{
			{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read a.txt"}}},
			{Role: history.Assistant, Parts: []history.Part{
				{Type: history.TextPart, Text: "Reading."},
				{Type: history.ToolCallPart, CallID: "toolu_1", Name: "workspace--read", Input: json.RawMessage(`{"path":"a.txt"}`)},
				{Type: history.ToolCallPart, CallID: "toolu_2", Name: "workspace--read", Input: json.RawMessage(`{"path":"img.png"}`)},
			}},
			{Role: history.User, Parts: []history.Part{
				{Type: history.ToolResultPart, CallID: "toolu_1", Text: "line \"one\"\n\ttwo <&>\n"},
				{Type: history.ToolResultPart, CallID: "toolu_2", Text: "[image: image/png, 4 bytes]", Images: []result.Image{{MIMEType: "image/png", Data: []byte("\x89PNG")}}},
			}},
			{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "toolu_3", Name: "workspace--read", Input: json.RawMessage(`{"path":"missing"}`)}}},
			{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "toolu_3", Text: "missing does not exist in the workspace", IsError: true}}},
		},
	}
}

// SampleFirstRound is SampleRequest as OpenAI's wires' tests send it: to
// model, its first round alone, its first tool alone with schema as its
// input schema, and the call ids as OpenAI gives them (call_1 ...).
func SampleFirstRound(model, schema string) provider.Request {
	r := SampleRequest()
	r.Model = model
	r.Tools = r.Tools[:1]
	r.Tools[0].InputSchema = json.RawMessage(schema)
	r.Messages = r.Messages[:3]
	for _, m := range r.Messages {
		for i := range m.Parts {
			if id, ok := strings.CutPrefix(m.Parts[i].CallID, "toolu_"); ok {
				m.Parts[i].CallID = "call_" + id
			}
		}
	}
	return r
}
