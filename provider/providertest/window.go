package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// This file holds the server's model of size and caching: how a request is
// counted in tokens (Tokens, Canonical), how it is refused when it does not
// fit Server.Window, and how the cached prefix and the usage of an answer
// are worked out when a step leaves usage to the server.

// stripCacheMarks removes from compact JSON every cache_control member
// whose value is a flat object, together with the comma that joins it to
// its neighbour: ,"cache_control":{...} after another member, or
// "cache_control":{...}, before one. Inside a JSON string every quote is
// escaped, so `"cache_control":{` can only be structure, never text.
func stripCacheMarks(body []byte) []byte {
	const key = `"cache_control":{`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return body
	}
	out := make([]byte, 0, len(body))
	for i >= 0 {
		end := bytes.IndexAny(body[i+len(key):], "{}")
		if end < 0 || body[i+len(key)+end] != '}' {
			break // a nested value: not a marker this knows
		}
		end += i + len(key) + 1
		switch {
		case i > 0 && body[i-1] == ',':
			out = append(out, body[:i-1]...)
		case end < len(body) && body[end] == ',':
			out = append(out, body[:i]...)
			end++
		default: // the only member: kept
			out = append(out, body[:end]...)
		}
		body = body[end:]
		i = bytes.Index(body, []byte(key))
	}
	return append(out, body...)
}

// frontKeys are the top-level members Canonical puts first, in the order a
// provider's prompt cache reads them (tools, then system, then messages,
// as Anthropic documents its cache hierarchy; the model names the cache).
var frontKeys = []string{"model", "tools", "system", "systemInstruction", "messages", "contents"}

// Canonical is the form of a request body that tokens are counted on and
// prefixes compared on: the body compacted, every cache_control marker
// taken out (they move from request to request and are not content), and
// its top-level members reordered as a prompt cache reads them: "model",
// "tools", "system", "messages", then every other member (max_tokens,
// stream, ...) in the body's order. Every wire encodes compact JSON, so
// the canonical form of its bodies is exactly as long as the body less its
// markers. A body that is not a JSON object is only stripped of markers.
//
// It is a measure for tests, not a tokenizer: it must not be used to size
// requests to a real provider.
func Canonical(body []byte) []byte { return measureBody(body).canon }

// Tokens is how many input tokens the server counts for a request body:
// the bytes of its Canonical form divided by 4, rounded up. Images count as
// their base64 text, escapes as their bytes. Tests call it to know what
// the server will count.
func Tokens(body []byte) int { return tokensOf(len(Canonical(body))) }

func tokensOf(n int) int { return (n + 3) / 4 }

// measured is what the server reads of a request body, in one pass.
type measured struct {
	canon []byte // Canonical
	// room is the answer's room the request asks for: Anthropic's
	// max_tokens, OpenAI's max_completion_tokens or max_tokens (the first
	// when both), the Responses API's max_output_tokens, 0 when it has none.
	room     int
	messages []byte // the "messages" member (the Responses API's "input"), nil when none
}

func (m measured) tokens() int { return tokensOf(len(m.canon)) }

func measureBody(body []byte) measured {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return measured{canon: stripCacheMarks(body)}
	}
	compact := stripCacheMarks(compactJSON(body))
	keys, vals, ok := members(compact)
	if !ok {
		return measured{canon: compact}
	}
	m := measured{canon: make([]byte, 0, len(compact))}
	m.canon = append(m.canon, '{')
	add := func(i int) {
		if len(m.canon) > 1 {
			m.canon = append(m.canon, ',')
		}
		m.canon = append(m.canon, '"')
		m.canon = append(m.canon, keys[i]...)
		m.canon = append(m.canon, '"', ':')
		m.canon = append(m.canon, vals[i]...)
	}
	front := map[string]bool{}
	for _, k := range frontKeys {
		front[k] = true
		for i := range keys {
			if keys[i] == k {
				add(i)
			}
		}
	}
	room := map[string]int{}
	for i, k := range keys {
		switch k {
		case "messages", "contents", "input": // Gemini's, the Responses API's
			m.messages = vals[i]
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			room[k], _ = strconv.Atoi(string(vals[i]))
		case "generationConfig": // Gemini's room is in it
			var gen struct {
				MaxOutputTokens int `json:"maxOutputTokens"`
			}
			_ = json.Unmarshal(vals[i], &gen)
			room["max_tokens"] = gen.MaxOutputTokens
		}
		if !front[k] {
			add(i)
		}
	}
	m.canon = append(m.canon, '}')
	m.room = room["max_tokens"]
	if n, ok := room["max_completion_tokens"]; ok {
		m.room = n
	}
	if n, ok := room["max_output_tokens"]; ok {
		m.room = n
	}
	return m
}

// compactJSON is b without the whitespace outside its strings; b itself
// when it has none.
func compactJSON(b []byte) []byte {
	var out []byte
	inString, escaped := false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if out == nil {
				out = append(make([]byte, 0, len(b)), b[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return b
	}
	return out
}

// members splits a compact JSON object into its top-level keys (as
// written, escapes kept) and values (their bytes). ok is false when b is
// not an object of that shape; values are not validated.
func members(b []byte) (keys []string, vals [][]byte, ok bool) {
	n := len(b)
	if n < 2 || b[0] != '{' || b[n-1] != '}' {
		return nil, nil, false
	}
	if n == 2 {
		return nil, nil, true
	}
	// end is the index of the closing quote of the string opening at i.
	end := func(i int) int {
		for j := i + 1; j < n; j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j
			}
		}
		return -1
	}
	for i := 1; ; {
		if b[i] != '"' {
			return nil, nil, false
		}
		k := end(i)
		if k < 0 || k+1 >= n || b[k+1] != ':' {
			return nil, nil, false
		}
		start, depth, j := k+2, 0, k+2
	value:
		for ; j < n; j++ {
			switch b[j] {
			case '"':
				if j = end(j); j < 0 {
					return nil, nil, false
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth == 0 {
					break value
				}
				depth--
			case ',':
				if depth == 0 {
					break value
				}
			}
		}
		if j >= n || j == start {
			return nil, nil, false
		}
		keys, vals = append(keys, string(b[i+1:k])), append(vals, b[start:j])
		if b[j] == '}' {
			return keys, vals, j == n-1
		}
		i = j + 1
		if i >= n {
			return nil, nil, false
		}
	}
}

// refusal is the body a provider answers a request with, with a 400, when
// its input (tokens) and its answer's room (room) do not fit window, or ""
// when they fit; Server.Window gives the messages. Anthropic's API and
// OpenAI's have two messages for it, seen by their clients in the field:
// one when the input alone is over the window, one when only the answer's
// room puts it over; Bedrock's and Gemini's are their own (bedrockRefusal,
// geminiRefusal).
func refusal(wire string, window, tokens, room int) string {
	if wire == "gemini" && window > 0 {
		return geminiRefusal(window, tokens)
	}
	if window <= 0 || tokens+room <= window {
		return ""
	}
	if wire == "bedrock" {
		return bedrockRefusal(window, tokens, room)
	}
	if wire == "anthropic" || wire == "vertex" {
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
// canon shares with any of the remembered canonical forms, and the tokens
// of the form it shares it with (the latest of them on a tie; 0 when none
// is remembered).
func cached(canon []byte, recent [][]byte) (read, of int) {
	best, from := 0, -1
	for i, r := range recent {
		if n := sharedPrefix(canon, r); n >= best {
			best, from = n, i
		}
	}
	if from < 0 {
		return 0, 0
	}
	return best / 4, tokensOf(len(recent[from]))
}

// sharedPrefix is how many leading bytes a and b have in common: compared
// a block at a time (bytes.Equal is the machine's memcmp), then byte by
// byte in the first block that differs.
func sharedPrefix(a, b []byte) int {
	const block = 1024
	n, i := min(len(a), len(b)), 0
	for i+block <= n && bytes.Equal(a[i:i+block], b[i:i+block]) {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// usageSet reports whether a step declares its own usage.
func usageSet(step Step) bool {
	return step.Input != 0 || step.Output != 0 || step.CacheRead != 0 || step.CacheWrite != 0
}

// outputTokens is the output the server reports for a step: its text and
// its tool calls' names and inputs, bytes / 4, plus one.
func outputTokens(step Step) int {
	n := len(step.Text)
	for _, th := range step.Thinking { // thinking is output too
		n += len(th.Text) + len(th.Redacted)
	}
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
	// Breaks is how many answered requests broke the cached prefix: the
	// first one aside, those whose cache read (the longest prefix shared
	// with one of the 8 requests answered before them) is less than half
	// of the tokens of that earlier request (the latest of them on a
	// tie). A conversation that grows reads all of its previous request
	// and does not break, however big its new round; one that takes
	// something out of its beginning, or starts anew, does. It is the
	// server's own measure, counted whether or not the step declared its
	// usage, but only while Window or Cache is set (else 0).
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
