package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// ProviderSampler completes servers' sampling requests with a
// conversation's own provider and model (a Sampler): one request, no
// tools, the server's messages as they are. The caller picks the provider
// and model (the command's, or the HTTP API's conversation's): package
// mcp must not. It must not put the server's request into the
// conversation: what the model says goes to the server only.
type ProviderSampler struct {
	Provider provider.Provider
	Model    string
}

// Sample sends s as one request and gives back the text of the answer.
func (p ProviderSampler) Sample(ctx context.Context, s *Sample) (Completion, error) {
	req := provider.Request{Model: p.Model, System: s.System, MaxTokens: int(s.MaxTokens)}
	for _, m := range s.Messages {
		role := history.User
		switch m.Role {
		case "user":
		case "assistant":
			role = history.Assistant
		default:
			return Completion{}, fmt.Errorf("a message of role %q: want user or assistant", m.Role)
		}
		req.Messages = append(req.Messages, history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: m.Text}}})
	}
	if len(req.Messages) == 0 {
		return Completion{}, errors.New("no messages to complete")
	}
	resp, err := p.Provider.Complete(ctx, req, nil)
	if err != nil {
		return Completion{}, err
	}
	var text strings.Builder
	for _, part := range resp.Message.Parts {
		if part.Type == history.TextPart {
			text.WriteString(part.Text)
		}
	}
	c := Completion{Text: text.String(), Model: p.Model, StopReason: stopReason(resp.StopReason)}
	if u := resp.Message.Usage; u != nil {
		c.Tokens = int64(u.Input + u.CacheRead + u.CacheWrite + u.Output)
	}
	return c, nil
}

// stopReason is a wire's stop reason in MCP's words.
func stopReason(wire string) string {
	switch wire {
	case "end_turn", "stop", "STOP", "completed":
		return "endTurn"
	case "max_tokens", "length", "MAX_TOKENS", "incomplete":
		return "maxTokens"
	case "stop_sequence":
		return "stopSequence"
	}
	return wire
}
