package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// This file holds the server's model of size and caching: how a request is
// counted in tokens (Tokens, Canonical), how it is refused when it does not
// fit Server.Window, and how the cached prefix and the usage of an answer
// are worked out when a step leaves usage to the server.

// cacheMarks matches one cache_control member of a JSON object together
// with the comma that joins it to its neighbour: ,"cache_control":{...}
// after another member, or "cache_control":{...}, before one. Inside a
// JSON string every quote is escaped, so the pattern can only match
// structure, never text.
var cacheMarks = regexp.MustCompile(`,"cache_control":\{[^{}]*\}|"cache_control":\{[^{}]*\},`)

// frontKeys are the top-level members Canonical puts first, in the order a
// provider's prompt cache reads them (tools, then system, then messages,
// as Anthropic documents its cache hierarchy; the model names the cache).
var frontKeys = []string{"model", "tools", "system", "messages"}

// Canonical is the form of a request body that tokens are counted on and
// prefixes compared on: the body compacted, every cache_control marker
// taken out (they move from request to request and are not content), and
// its top-level members reordered as a prompt cache reads them: "model",
// "tools", "system", "messages", then every other member (max_tokens,
// stream, ...) in the body's order. Both wires encode compact JSON, so the
// canonical form of their bodies is exactly as long as the body less its
// markers. A body that is not a JSON object is only stripped of markers.
//
// It is a measure for tests, not a tokenizer: it must not be used to size
// requests to a real provider.
func Canonical(body []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, body) == nil {
		body = buf.Bytes()
	}
	body = cacheMarks.ReplaceAll(body, nil)
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return body
	}
	type member struct {
		key string
		raw json.RawMessage
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return body
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return body
		}
		members = append(members, member{key, raw})
	}
	out := make([]byte, 0, len(body))
	out = append(out, '{')
	add := func(m member) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(m.key)
		out = append(out, k...)
		out = append(out, ':')
		out = append(out, m.raw...)
	}
	front := map[string]bool{}
	for _, k := range frontKeys {
		front[k] = true
		for _, m := range members {
			if m.key == k {
				add(m)
			}
		}
	}
	for _, m := range members {
		if !front[m.key] {
			add(m)
		}
	}
	return append(out, '}')
}

// Tokens is how many input tokens the server counts for a request body:
// the bytes of its Canonical form divided by 4, rounded up. Images count as
// their base64 text. Tests call it to know what the server will count.
func Tokens(body []byte) int { return tokensOf(len(Canonical(body))) }

func tokensOf(n int) int { return (n + 3) / 4 }

// maxTokens is the answer's room a request asks for: Anthropic's
// max_tokens, OpenAI's max_completion_tokens or max_tokens (whichever the
// request has; the first when both), 0 when it has none.
func maxTokens(body []byte) int {
	var req struct {
		MaxTokens           *int `json:"max_tokens"`
		MaxCompletionTokens *int `json:"max_completion_tokens"`
	}
	_ = json.Unmarshal(body, &req)
	switch {
	case req.MaxCompletionTokens != nil:
		return *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		return *req.MaxTokens
	}
	return 0
}

// refusal is the status and body a provider answers a request with when
// its input (tokens) and its answer's room (room) do not fit window, or ""
// when they fit. The messages are the providers' own, as their clients
// see them:
//
//   - Anthropic, the input alone over the window: "prompt is too long:
//     N tokens > W maximum"; the input fitting but not with max_tokens:
//     "input length and `max_tokens` exceed context limit: N + B > W,
//     decrease input length or `max_tokens` and try again". Both are 400
//     invalid_request_error.
//   - OpenAI, 400 invalid_request_error, param "messages", code
//     "context_length_exceeded": "This model's maximum context length is W
//     tokens. However, your messages resulted in N tokens. Please reduce
//     the length of the messages." for the input alone, and "... However,
//     you requested N+B tokens (N in the messages, B in the completion).
//     Please reduce the length of the messages or completion." with the
//     answer's room.
func refusal(wire string, window, tokens, room int) string {
	if window <= 0 || tokens+room <= window {
		return ""
	}
	if wire == "anthropic" {
		msg := fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, window)
		if tokens <= window {
			msg = fmt.Sprintf("input length and `max_tokens` exceed context limit: %d + %d > %d, decrease input length or `max_tokens` and try again", tokens, room, window)
		}
		return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}, "request_id": "req_providertest"})
	}
	msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, tokens)
	if tokens <= window {
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", window, tokens+room, tokens, room)
	}
	return mustJSON(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
}

// remembered is how many answered requests the cache model remembers.
const remembered = 8

// cached is the longest prefix, in tokens (bytes / 4, rounded down), that
// canon shares with any of the remembered canonical forms.
func cached(canon []byte, recent [][]byte) int {
	best := 0
	for _, r := range recent {
		n := min(len(r), len(canon))
		i := 0
		for i < n && r[i] == canon[i] {
			i++
		}
		best = max(best, i)
	}
	return best / 4
}

// usageSet reports whether a step declares its own usage.
func usageSet(step Step) bool {
	return step.Input != 0 || step.Output != 0 || step.CacheRead != 0 || step.CacheWrite != 0
}

// outputTokens is the output the server reports for a step: its text and
// its tool calls' names and inputs, bytes / 4, plus one.
func outputTokens(step Step) int {
	n := len(step.Text)
	for _, c := range step.ToolCalls {
		n += len(c.Name) + len(c.Input)
	}
	return n/4 + 1
}

// Stats are totals over the requests a Server got. Input and CacheRead
// add up the usage the server reported, whether a step declared it or the
// server worked it out; a Raw body's own usage is not read.
type Stats struct {
	// Requests is how many requests were answered: they took a step (or
	// an answer from Respond) that is not an error status. Refused and
	// error answers are not among them.
	Requests int
	// Refused is how many requests were refused for not fitting Window.
	Refused int
	// Input is the input tokens reported over the answered requests:
	// input, cache read and cache write added up.
	Input int
	// CacheRead is the cache read tokens reported over them.
	CacheRead int
	// Output is the output tokens reported over them.
	Output int
	// Breaks is how many answered requests, the first one aside, shared
	// less than half of their tokens (Tokens) with one of the 8 requests
	// answered before them: a broken prefix. It is the server's own
	// measure, counted whether or not the step declared its usage, but
	// only while Window or Cache is set (else 0).
	Breaks int
	// Largest is the most tokens (Tokens) of one answered request, counted
	// only while Window or Cache is set (else 0).
	Largest int
}

// CacheRatio is CacheRead over Input, 0 with no input.
func (s Stats) CacheRatio() float64 {
	if s.Input == 0 {
		return 0
	}
	return float64(s.CacheRead) / float64(s.Input)
}
