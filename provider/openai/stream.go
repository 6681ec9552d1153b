package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/sse"
	"github.com/myelin-run/myelin/result"
)

// The streamed answer is read here, event by event (provider/sse), each
// chunk decoded by encoding/json into chunk — only the fields the wire
// uses — instead of the SDK's stream reader, which decoded every chunk
// into its generic types first. "data: [DONE]" ends the stream. A chunk
// with an "error" object (the SDK's rule), or one that is itself an error
// ({"object":"error","message":...}, vLLM's shape), ends it with an error
// that keeps the provider's error object; before any output that error is
// read as a refusal of the request (status 400), and one too long is a
// provider.TooLongError, as tooLong decides for an error answer.

// chunk is the part of a chat.completion.chunk the wire reads.
type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   text `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// usage is the part of a completion's usage the wire reads.
type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

var done = []byte("[DONE]")

// maxCalls bounds a tool call's index in the stream: the calls are made
// for each index up to it, so an index far past any answer's calls would
// allocate without end.
const maxCalls = 1 << 12

// text is a JSON string decoded with its bytes that are not UTF-8 kept as
// they came, so that result.WellFormed makes them well formed once
// (contract §3: a surrogate written in UTF-8 form, as CESU-8 writes it,
// is the character it encodes with its pair; encoding/json would have
// made each of its bytes a U+FFFD before). null leaves it as it is.
type text string

// UnmarshalJSON decodes the string in raw as encoding/json does, but for
// the bytes that are not UTF-8, which it keeps.
func (t *text) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		return nil
	}
	s, ok := unquote(raw)
	if !ok {
		var v string
		return json.Unmarshal(raw, &v) // the error encoding/json gives
	}
	*t = text(s)
	return nil
}

// unquote is the JSON string raw (quotes included) unescaped, with every
// byte outside an escape kept as it is; false when raw is not a string.
// An escaped surrogate pair is the character it encodes; a lone escaped
// surrogate is U+FFFD, as encoding/json makes it.
func unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	raw = raw[1 : len(raw)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), true
	}
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			b = append(b, raw[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(raw[i+1:])
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2, ok = hex4(raw[i+3:])
				}
				if p := utf16.DecodeRune(r, r2); ok && p != utf8.RuneError {
					r = p
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", false
		}
	}
	return string(b), true
}

// hex4 is the rune of the four hex digits b begins with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// read reads a streamed answer from body into a, passing text to onText.
func (a *accumulator) read(body io.Reader, onText func(string)) error {
	r := sse.NewReader(body)
	streamed := false // some output was read
	for r.Next() {
		data := r.Event().Data
		if bytes.HasPrefix(data, done) {
			return nil
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("openai: a malformed chunk in the stream: %v: %.200q", err, data)
		}
		if e := bytes.TrimSpace(c.Error); len(e) > 0 && string(e) != "null" {
			return streamError(e, streamed)
		}
		if c.Object == "error" {
			return streamError(bytes.TrimSpace(data), streamed)
		}
		if c.Usage != nil {
			a.setUsage(c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.PromptTokensDetails.CachedTokens)
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue
			}
			if d := string(ch.Delta.Content); d != "" {
				streamed = true
				a.text.WriteString(d)
				if onText != nil {
					onText(result.WellFormed(d))
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index < 0 || tc.Index >= maxCalls {
					return fmt.Errorf("openai: a tool call in the stream has the index %d (an index from 0 to %d was expected)", tc.Index, maxCalls-1)
				}
				streamed = true
				for tc.Index >= len(a.calls) {
					a.calls = append(a.calls, &call{})
				}
				cl := a.calls[tc.Index]
				if tc.ID != "" {
					cl.id = tc.ID
				}
				cl.name += tc.Function.Name
				cl.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				a.stop = ch.FinishReason
			}
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("openai: %v", err)
	}
	return nil
}

// streamError is the error of an error object in the stream: the
// provider's object as its message; before any output, a refusal as too
// long is a provider.TooLongError around it.
func streamError(obj []byte, streamed bool) error {
	wire := &provider.WireError{Msg: "openai: the stream ended with an error: " + strings.TrimSpace(string(obj))}
	if !streamed {
		if tl := tooLong(http.StatusBadRequest, string(obj)); tl != nil {
			tl.Err = wire
			return tl
		}
	}
	return wire
}

// errNoFinish is the error of a stream that ended before the answer did.
var errNoFinish = errors.New("openai: the stream ended before the answer did (no finish_reason)")
