package mcp

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

func TestStopReasonsAreSaidInMCPsWords(t *testing.T) {
	for wire, want := range map[string]string{"end_turn": "endTurn", "stop": "endTurn", "max_tokens": "maxTokens", "length": "maxTokens", "stop_sequence": "stopSequence", "other": "other"} {
		if got := stopReason(wire); got != want {
			t.Errorf("stopReason(%q) = %q, want %q", wire, got, want)
		}
	}
}

// oneAnswer is a provider that answers every request with its text and
// usage, and keeps the request.
type oneAnswer struct {
	got  []provider.Request
	text string
}

func (p *oneAnswer) Complete(_ context.Context, req provider.Request, _ func(string)) (provider.Response, error) {
	p.got = append(p.got, req)
	return provider.Response{StopReason: "end_turn", Message: history.Message{Role: history.Assistant,
		Parts: []history.Part{{Type: history.TextPart, Text: p.text}}, Usage: &history.Usage{Input: 10, CacheRead: 5, Output: 7}}}, nil
}

func TestASampleIsOneRequestToTheConversationsModelWithoutTools(t *testing.T) {
	prov := &oneAnswer{text: "hello"}
	s := ProviderSampler{Provider: prov, Model: "m-1"}
	c, err := s.Sample(context.Background(), &Sample{Server: "x", System: "be brief", MaxTokens: 50,
		Messages: []SampleMessage{{Role: "user", Text: "hi"}, {Role: "assistant", Text: "yes?"}, {Role: "user", Text: "greet"}}})
	if err != nil {
		t.Fatal(err)
	}
	if c != (Completion{Text: "hello", Model: "m-1", StopReason: "endTurn", Tokens: 22}) {
		t.Errorf("completion %+v", c)
	}
	req := prov.got[0]
	if req.Model != "m-1" || req.System != "be brief" || req.MaxTokens != 50 || len(req.Tools) != 0 || len(req.Messages) != 3 ||
		req.Messages[1].Role != history.Assistant || req.Messages[2].Parts[0].Text != "greet" {
		t.Errorf("request %+v", req)
	}
	if _, err := s.Sample(context.Background(), &Sample{MaxTokens: 5, Messages: []SampleMessage{{Role: "system", Text: "x"}}}); err == nil {
		t.Error("a message of role system was sent")
	}
}
