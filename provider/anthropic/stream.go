package anthropic

import (
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// The streamed answer is read here, with provider/sse and decodeEvent
// (scan.go: encoding/json's result, without its cost) into streamEvent, which holds only the fields the accumulator uses: the
// SDK's stream (ssestream and apijson) decoded every event into its whole
// union type first, which was most of the time a light round spent in the
// wire (docs/overhead.md, "The Anthropic wire's reader"). The SDK still
// sends the request: its auth, retries, platform middlewares and errors
// for a status of 400 or more are unchanged. What this reader does is
// what the SDK's stream did: events named "ping", or not named, are
// skipped, as are events with no data; an event named "error" ends the
// stream with the SDK's own *sdk.Error for it (message, type and the
// response's status and request ID); any other event is decoded by the
// "type" of its data (an event of type "error" is an error event too,
// whatever its name), and a type the accumulator does not know is ignored.
// Bedrock's event stream is read by eventstream.go into the same events.

// streamEvent is the fields of one stream event that the accumulator
// reads; every other field is skipped by the decoder. It is reset before
// each event.
type streamEvent struct {
	Type  string `json:"type"`
	Index int64  `json:"index"`
	// Message is message_start's message, of which only the usage counts.
	Message struct {
		Usage struct {
			InputTokens              int64 `json:"input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
	// ContentBlock is content_block_start's block.
	ContentBlock struct {
		Type      string            `json:"type"`
		ID        string            `json:"id"`
		Name      string            `json:"name"`
		Text      provider.JSONText `json:"text"`
		Thinking  provider.JSONText `json:"thinking"`
		Signature string            `json:"signature"`
		Data      string            `json:"data"`
	} `json:"content_block"`
	// Delta is content_block_delta's delta, or message_delta's.
	Delta struct {
		Type        string            `json:"type"`
		Text        provider.JSONText `json:"text"`
		PartialJSON string            `json:"partial_json"`
		Thinking    provider.JSONText `json:"thinking"`
		Signature   string            `json:"signature"`
		StopReason  string            `json:"stop_reason"`
	} `json:"delta"`
	// Usage is message_delta's; a count that is absent (or null) leaves
	// the one message_start gave.
	Usage struct {
		InputTokens              *int64 `json:"input_tokens"`
		OutputTokens             int64  `json:"output_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// readStream reads the streamed answer in r to its message_stop. onText
// gets each text delta, onThinking each thinking delta (either may be nil).
// resp is the response body comes from, for the error of an error event
// (its status and request ID); it may be nil. An error event is the SDK's
// *sdk.Error for it, described as a refused request is (describe).
func readStream(r events, resp *http.Response, onText, onThinking func(string)) (provider.Response, error) {
	var (
		a  accumulator
		ev streamEvent
	)
	for r.Next() {
		e := r.Event()
		switch e.Name {
		case "", "ping":
			continue
		case "error":
			return provider.Response{}, describe(streamError(resp, e.Data))
		}
		if len(e.Data) == 0 {
			continue
		}
		if err := decodeEvent(e.Data, &ev); err != nil {
			return provider.Response{}, fmt.Errorf("anthropic: malformed stream: a %s event that is not the JSON expected (%v): %.200q", e.Name, err, e.Data)
		}
		switch ev.Type {
		case "error":
			// an error that came under another name (a Bedrock chunk)
			return provider.Response{}, describe(streamError(resp, e.Data))
		case "message_start":
			u := ev.Message.Usage
			a.usage = usageOf(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
		case "content_block_start":
			cb := &ev.ContentBlock
			a.start(cb.Type, cb.ID, cb.Name, string(cb.Text))
			b := a.blocks[len(a.blocks)-1]
			switch cb.Type {
			case "thinking":
				b.text.WriteString(string(cb.Thinking))
				b.signature.WriteString(cb.Signature)
				if onThinking != nil && cb.Thinking != "" {
					onThinking(result.WellFormed(string(cb.Thinking)))
				}
			case "redacted_thinking":
				b.data = cb.Data
			}
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
				return provider.Response{}, fmt.Errorf("anthropic: malformed stream: a delta for content block %d, which never started", ev.Index)
			}
			b := a.blocks[ev.Index]
			d := &ev.Delta
			switch d.Type {
			case "text_delta":
				b.text.WriteString(string(d.Text))
				if onText != nil && d.Text != "" {
					onText(result.WellFormed(string(d.Text)))
				}
			case "input_json_delta":
				b.input.WriteString(d.PartialJSON)
			case "thinking_delta":
				b.text.WriteString(string(d.Thinking))
				if onThinking != nil && d.Thinking != "" {
					onThinking(result.WellFormed(string(d.Thinking)))
				}
			case "signature_delta":
				b.signature.WriteString(d.Signature)
			}
		case "message_delta":
			u := &ev.Usage
			a.stop = ev.Delta.StopReason
			a.usage.Output = int(u.OutputTokens)
			if u.InputTokens != nil {
				a.usage.Input = int(*u.InputTokens)
			}
			if u.CacheReadInputTokens != nil {
				a.usage.CacheRead = int(*u.CacheReadInputTokens)
			}
			if u.CacheCreationInputTokens != nil {
				a.usage.CacheWrite = int(*u.CacheCreationInputTokens)
			}
		case "message_stop":
			a.done = true
		}
	}
	if err := r.Err(); err != nil {
		return provider.Response{}, describe(err)
	}
	if !a.done {
		return provider.Response{}, fmt.Errorf("anthropic: the stream ended before the message did (no message_stop)")
	}
	return a.response(), nil
}

// streamError is the error of an error event whose data is data: the
// SDK's *sdk.Error, as its stream made it (the provider's message and
// error type read from data, the status and request ID from resp), or,
// when data is not an error object, an error that quotes it.
func streamError(resp *http.Response, data []byte) error {
	aerr := &sdk.Error{}
	if resp != nil {
		aerr.Request = resp.Request
		aerr.Response = resp
		aerr.StatusCode = resp.StatusCode
		aerr.RequestID = resp.Header.Get("request-id")
		aerr.WorkspaceID = resp.Header.Get("anthropic-workspace-id")
	}
	if aerr.UnmarshalJSON(data) != nil {
		return fmt.Errorf("received error while streaming: %s", data)
	}
	return aerr
}
