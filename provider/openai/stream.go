package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// The streamed answer is read here, event by event (internal/sse), each
// chunk decoded into chunk — only the fields the wire uses — by
// decodeChunk, a scan held to encoding/json, instead of the SDK's stream
// reader, which decoded every chunk
// into its generic types first. "data: [DONE]" ends the stream. A chunk
// with an "error" object (the SDK's rule), or one that is itself an error
// ({"object":"error","message":...}, vLLM's shape), ends it with an error
// that keeps the provider's error object; before any output that error is
// read as a refusal of the request (status 400), and one too long is a
// provider.TooLongError, as tooLong decides for an error answer.

// chunk is the part of a chat.completion.chunk the wire reads.
type chunk struct {
	Object  string          `json:"object"`
	Choices []choice        `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// choice is the part of a chunk's choice the wire reads.
type choice struct {
	Index int `json:"index"`
	Delta struct {
		Content   content    `json:"content"`
		ToolCalls []toolCall `json:"tool_calls"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

// toolCall is the part of a delta's tool call the wire reads.
type toolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
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

// read reads a streamed answer from body into a, passing text to onText.
func (a *accumulator) read(body io.Reader, onText func(string)) error {
	r := sse.Borrow(body)
	defer r.Release()
	streamed := false // some output was read
	var c chunk
	for r.Next() {
		data := r.Event().Data
		if bytes.HasPrefix(data, done) {
			return nil
		}
		if err := decodeChunk(data, &c); err != nil {
			return fmt.Errorf("openai: a malformed chunk in the stream, %.200q: %w", data, err)
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
			if d := string(ch.Delta.Content.Text); d != "" {
				streamed = true
				a.text.WriteString(d)
				if onText != nil {
					onText(result.WellFormed(d))
				}
			}
			if d := string(ch.Delta.Content.Thinking); d != "" {
				streamed = true
				a.think(d)
			}
			a.skip(ch.Delta.Content.Skipped)
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
		return fmt.Errorf("openai: reading the stream: %w", err)
	}
	return nil
}

// streamError is the error of an error object in the stream: the
// provider's object as its message, kept (ErrorObject) for
// provider.Transient to read; before any output, a refusal as too long is
// a provider.TooLongError around it.
func streamError(obj []byte, streamed bool) error {
	o := strings.TrimSpace(string(obj))
	wire := &provider.WireError{Msg: "openai: the stream ended with an error: " + o, Err: &ErrorObject{Object: o}}
	if !streamed {
		if tl := tooLong(http.StatusBadRequest, string(obj)); tl != nil {
			tl.Err = wire
			return tl
		}
	}
	return wire
}

// ErrorObject is an error object a stream of a wire on the OpenAI API
// ended with (Chat Completions' {"error":{...}} chunk, the Responses
// API's error event or failed response), kept as the provider sent it so
// that provider.Transient reads it as it reads an error answer's *Error:
// through RawJSON, as an error answer's body. A server_error or a rate limit is
// then transient, an invalid request is not (docs/ratelimits.md,
// "Retries"). It is the cause beneath the wire's error (a
// provider.WireError, whose text names the wire); it must not be
// reported alone.
type ErrorObject struct {
	// Object is the error object's JSON: {"message":...,"type":...,
	// "code":...}, or a whole chunk or event that is itself an error
	// (vLLM's {"object":"error",...}).
	Object string
}

// Error is the object's JSON.
func (e *ErrorObject) Error() string { return e.Object }

// RawJSON is the object as the body of an error answer, {"error":
// Object}: what ratelimit.FromResponse reads.
func (e *ErrorObject) RawJSON() string { return `{"error":` + e.Object + `}` }

// errNoFinish is the error of a stream that ended before the answer did:
// a cut (provider.ErrStreamCut), which the agent may send again.
var errNoFinish = fmt.Errorf("openai: %w (no finish_reason)", provider.ErrStreamCut)
