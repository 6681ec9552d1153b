package providertest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// This file holds the Anthropic fake's extended thinking: the thinking and
// redacted_thinking blocks a Step answers with, in the shapes the Messages
// API sends (content_block_start, thinking_delta, signature_delta,
// content_block_stop when streamed; whole blocks when not), and the check
// that refuses, as the API does, a request that drops or changes them
// (Server.CheckThinking).

// Thinking is a thinking block a step answers with, on Anthropic: Text
// and Signature, or, when Redacted is set, a redacted_thinking block
// whose data is Redacted.
type Thinking struct {
	Text, Signature string
	Redacted        string
	// BeforeCall places the block right before ToolCalls[BeforeCall] when
	// it is between 1 and len(ToolCalls)-1 (interleaved thinking: thinking
	// between the tool calls of one answer); otherwise the block comes
	// first, before the text, in the order of the step's Thinking.
	BeforeCall int
}

// MissingThinking is the Messages API's refusal of a request inside a tool
// loop whose final assistant message does not start with the thinking it
// was answered with, word for word (N is the message's index in the
// request, FOUND the type of its first block).
const MissingThinking = "messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"

// InvalidSignature is the Messages API's refusal of a thinking block that
// is not as it was sent (its thinking or signature changed, blocks
// reordered, merged or missing), word for word.
const InvalidSignature = "messages.%d.content.%d: Invalid `signature` in `thinking` block"

// InvalidRedacted is the fake's refusal of a redacted_thinking block whose
// data it never sent; the API's own words for it were not found in its
// documentation, so these follow InvalidSignature.
const InvalidRedacted = "messages.%d.content.%d: Invalid `data` in `redacted_thinking` block"

// block is one content block of an Anthropic answer, in order.
type block struct {
	thinking *Thinking
	text     string
	call     *ToolCall
}

// anthropicBlocks are a step's content blocks in the order it sends them:
// its leading thinking, its text, then its tool calls with the thinking
// placed between them.
func anthropicBlocks(step Step) []block {
	var out []block
	placed := func(th Thinking) bool { return th.BeforeCall > 0 && th.BeforeCall < len(step.ToolCalls) }
	for i := range step.Thinking {
		if !placed(step.Thinking[i]) {
			out = append(out, block{thinking: &step.Thinking[i]})
		}
	}
	if step.Text != "" {
		out = append(out, block{text: step.Text})
	}
	for k := range step.ToolCalls {
		for i := range step.Thinking {
			if placed(step.Thinking[i]) && step.Thinking[i].BeforeCall == k {
				out = append(out, block{thinking: &step.Thinking[i]})
			}
		}
		out = append(out, block{call: &step.ToolCalls[k]})
	}
	return out
}

// wholeBlock is a thinking block as a non-streamed answer holds it.
func (th Thinking) wholeBlock() map[string]any {
	if th.Redacted != "" {
		return map[string]any{"type": "redacted_thinking", "data": th.Redacted}
	}
	return map[string]any{"type": "thinking", "thinking": th.Text, "signature": th.Signature}
}

// streamThinking writes a thinking block's events at index i: its start,
// the thinking in two deltas, the signature in one, its stop; a redacted
// block whole in its start.
func streamThinking(b *strings.Builder, i int, th Thinking) {
	sb := func(event string, data any) { sse(b, event, data) }
	if th.Redacted != "" {
		sb("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": th.wholeBlock()})
		sb("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		return
	}
	sb("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "thinking", "thinking": ""}})
	for _, part := range halves(th.Text) {
		sb("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": part}})
	}
	sb("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "signature_delta", "signature": th.Signature}})
	sb("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
}

// halves cuts s in two at a character boundary, leaving out empty halves.
func halves(s string) []string {
	half := len(s) / 2
	for half > 0 && half < len(s) && s[half]&0xC0 == 0x80 {
		half++
	}
	var out []string
	for _, part := range []string{s[:half], s[half:]} {
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// sentThinking is what the server remembers of the thinking it sent: each
// signature with its thinking, each redacted block's data, and, by each
// tool call id, the thinking blocks of the answer that made the call.
type sentThinking struct {
	signed   map[string]string
	redacted map[string]bool
	byCall   map[string][]Thinking
}

// remember records the thinking of a step about to be sent; s.mu is held.
func (s *Server) remember(step Step) {
	if len(step.Thinking) == 0 {
		return
	}
	if s.sent.signed == nil {
		s.sent = sentThinking{signed: map[string]string{}, redacted: map[string]bool{}, byCall: map[string][]Thinking{}}
	}
	var order []Thinking
	for _, b := range anthropicBlocks(step) {
		if b.thinking != nil {
			order = append(order, *b.thinking)
			if b.thinking.Redacted != "" {
				s.sent.redacted[b.thinking.Redacted] = true
			} else {
				s.sent.signed[b.thinking.Signature] = b.thinking.Text
			}
		}
	}
	for _, c := range step.ToolCalls {
		s.sent.byCall[c.ID] = order
	}
}

// thinkingRefusal is the API's refusal of body for the thinking in it, ""
// when it would take it; s.mu is held. Every thinking block must be one the
// server sent, unchanged (signature compared); and with thinking on, when
// the request ends in tool results, the assistant message that asked for
// them must hold the thinking blocks its answer had, in their order, from
// its first block on when the answer started with thinking.
func (s *Server) thinkingRefusal(body []byte) string {
	var req struct {
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "" // a string content, or not JSON: nothing to check here
	}
	type blk struct {
		Type, Thinking, Signature, Data, ID string
	}
	read := func(raw json.RawMessage) blk {
		var b struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
			Data      string `json:"data"`
			ID        string `json:"id"`
		}
		_ = json.Unmarshal(raw, &b)
		return blk{b.Type, b.Thinking, b.Signature, b.Data, b.ID}
	}
	for i, m := range req.Messages {
		for j, raw := range m.Content {
			switch b := read(raw); b.Type {
			case "thinking":
				if text, ok := s.sent.signed[b.Signature]; !ok || text != b.Thinking {
					return fmt.Sprintf(InvalidSignature, i, j)
				}
			case "redacted_thinking":
				if !s.sent.redacted[b.Data] {
					return fmt.Sprintf(InvalidRedacted, i, j)
				}
			}
		}
	}
	if req.Thinking == nil || req.Thinking.Type == "disabled" || len(req.Messages) < 2 {
		return ""
	}
	last := req.Messages[len(req.Messages)-1]
	inLoop := false
	for _, raw := range last.Content {
		inLoop = inLoop || read(raw).Type == "tool_result"
	}
	n := len(req.Messages) - 2
	final := req.Messages[n]
	if !inLoop || final.Role != "assistant" || len(final.Content) == 0 {
		return ""
	}
	var want []Thinking
	var got []int // the positions of the message's thinking blocks
	for j, raw := range final.Content {
		b := read(raw)
		switch b.Type {
		case "tool_use":
			if want == nil {
				want = s.sent.byCall[b.ID]
			}
		case "thinking", "redacted_thinking":
			got = append(got, j)
		}
	}
	if len(want) == 0 {
		return ""
	}
	if first := read(final.Content[0]).Type; first != "thinking" && first != "redacted_thinking" {
		return fmt.Sprintf(MissingThinking, n, first)
	}
	for k, th := range want {
		if k >= len(got) {
			return fmt.Sprintf(InvalidSignature, n, len(final.Content)-1)
		}
		b := read(final.Content[got[k]])
		if th.Redacted != "" && b.Data != th.Redacted || th.Redacted == "" && (b.Signature != th.Signature || b.Thinking != th.Text) {
			return fmt.Sprintf(InvalidSignature, n, got[k])
		}
	}
	return ""
}
