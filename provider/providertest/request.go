package providertest

import (
	"encoding/json"
	"strings"
)

// Request is a request as Server.Respond is given it: decoded enough to
// choose an answer. It is a copy; changing it changes nothing the server
// keeps.
type Request struct {
	// Index is the request's position in Requests(), from 0; refused
	// requests have positions too.
	Index int
	// Body is the request body, byte for byte.
	Body []byte
	// Messages is the body's "messages" (on the Responses API, its
	// "input" items) decoded as JSON (each a map[string]any), nil when it
	// has none.
	Messages []any
	// MaxTokens is the answer's room the request asks for (max_tokens, or
	// on OpenAI max_completion_tokens), 0 when it has none.
	MaxTokens int
	// Tokens is its size as the server counts it (Tokens(Body)).
	Tokens int
}

func newRequest(index int, body []byte, m measured) Request {
	var msgs []any
	if m.messages != nil {
		_ = json.Unmarshal(m.messages, &msgs)
	}
	return Request{Index: index, Body: body, Messages: msgs, MaxTokens: m.room, Tokens: m.tokens()}
}

// LastUserText is the text of the request's last message with role "user":
// its content when that is a string, else the "text" of its blocks of
// type "text" (on the Responses API, "input_text"), joined by newlines.
// Tool results are not text here (on OpenAI they are "tool" messages; on
// the Responses API function_call_output items; on Anthropic tool_result
// blocks), so
// after a tool round it is the text the user last wrote, if any in that
// message, and "" otherwise. It is "" when there is no user message.
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m, _ := r.Messages[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		if parts, ok := m["parts"].([]any); ok { // Gemini's contents
			var texts []string
			for _, p := range parts {
				if p, ok := p.(map[string]any); ok && p["thought"] != true {
					if t, ok := p["text"].(string); ok {
						texts = append(texts, t)
					}
				}
			}
			return strings.Join(texts, "\n")
		}
		switch c := m["content"].(type) {
		case string:
			return c
		case []any:
			var texts []string
			for _, b := range c {
				if b, ok := b.(map[string]any); ok && (b["type"] == "text" || b["type"] == "input_text") {
					if t, ok := b["text"].(string); ok {
						texts = append(texts, t)
					}
				}
			}
			return strings.Join(texts, "\n")
		}
		return ""
	}
	return ""
}
