package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/provider"
)

// providerSampler completes MCP servers' sampling requests with the
// conversation's own provider and model (mcp.Sampler): one request, no
// tools, the server's messages as they are. It must not put the server's
// request into the conversation: what the model says goes to the server
// only.
type providerSampler struct {
	prov  provider.Provider
	model string
}

func (p providerSampler) Sample(ctx context.Context, s *mcp.Sample) (mcp.Completion, error) {
	req := provider.Request{Model: p.model, System: s.System, MaxTokens: int(s.MaxTokens)}
	for _, m := range s.Messages {
		role := history.User
		switch m.Role {
		case "user":
		case "assistant":
			role = history.Assistant
		default:
			return mcp.Completion{}, fmt.Errorf("a message of role %q: want user or assistant", m.Role)
		}
		req.Messages = append(req.Messages, history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: m.Text}}})
	}
	if len(req.Messages) == 0 {
		return mcp.Completion{}, errors.New("no messages to complete")
	}
	resp, err := p.prov.Complete(ctx, req, nil)
	if err != nil {
		return mcp.Completion{}, err
	}
	var text strings.Builder
	for _, part := range resp.Message.Parts {
		if part.Type == history.TextPart {
			text.WriteString(part.Text)
		}
	}
	c := mcp.Completion{Text: text.String(), Model: p.model, StopReason: stopReason(resp.StopReason)}
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
