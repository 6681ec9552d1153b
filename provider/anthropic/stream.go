package anthropic

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// The streamed answer is read here, with internal/sse and decodeEvent
// (scan.go: encoding/json's result, without its cost) into streamEvent, which holds only the fields the accumulator uses: the
// SDK's stream (ssestream and apijson) decoded every event into its whole
// union type first, which was most of the time a light round spent in the
// wire (docs/overhead.md, "The Anthropic wire's reader"). What this
// reader does is what the SDK's stream did: events named "ping", or not
// named, are skipped, as are events with no data; an event named "error"
// ends the stream with an *Error for it as the SDK made its own (message, type and the
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
			// CacheCreation is the cache writes by lifetime, of which
			// the one-hour ones are stored (history.Usage.CacheWrite1h);
			// the five-minute ones are the rest of the writes.
			CacheCreation struct {
				Ephemeral1hInputTokens int64 `json:"ephemeral_1h_input_tokens"`
			} `json:"cache_creation"`
		} `json:"usage"`
	} `json:"message"`
	// ContentBlock is content_block_start's block.
	ContentBlock struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Text      jsonstring.Text `json:"text"`
		Thinking  jsonstring.Text `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
		// id and name are ID and Name as the scan found them, when they
		// needed no decoding: their bytes in the event's data (valid
		// until the next event), ID and Name left empty. A read appends
		// both (appendRead): one of the two is empty.
		id, name []byte
	} `json:"content_block"`
	// Delta is content_block_delta's delta, or message_delta's.
	Delta struct {
		Type        string          `json:"type"`
		Text        jsonstring.Text `json:"text"`
		PartialJSON string          `json:"partial_json"`
		Thinking    jsonstring.Text `json:"thinking"`
		Signature   string          `json:"signature"`
		StopReason  string          `json:"stop_reason"`
		// partialJSON is PartialJSON as the scan found it, as id is ID.
		partialJSON []byte
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
// (its status and request ID); it may be nil. An error event is an
// *Error for it (streamErrorOf), described as a refused request is (describe).
func readStream(r events, resp *http.Response, onText, onThinking func(string)) (provider.Response, error) {
	rd := borrowReading()
	defer rd.release()
	return rd.read(r, resp, onText, onThinking)
}

// read is readStream with rd's accumulator and event, which must be
// empty (new, or emptied by empty).
func (rd *reading) read(r events, resp *http.Response, onText, onThinking func(string)) (provider.Response, error) {
	a, ev := &rd.a, &rd.ev
	for r.Next() {
		e := r.Event()
		switch e.Name {
		case "", "ping":
			continue
		case "error":
			return provider.Response{}, describe(streamErrorOf(resp, e.Data))
		}
		if len(e.Data) == 0 {
			continue
		}
		if err := decodeEvent(e.Data, ev); err != nil {
			return provider.Response{}, fmt.Errorf("anthropic: malformed stream: a %s event that is not the JSON expected, %.200q: %w", e.Name, e.Data, err)
		}
		switch ev.Type {
		case "error":
			// an error that came under another name (a Bedrock chunk)
			return provider.Response{}, describe(streamErrorOf(resp, e.Data))
		case "message_start":
			u := ev.Message.Usage
			a.usage = usageOf(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.CacheCreation.Ephemeral1hInputTokens)
		case "content_block_start":
			cb := &ev.ContentBlock
			b := a.start(cb.Type, "", "", string(cb.Text))
			b.id = appendRead(b.id, cb.id, cb.ID)
			b.name = appendRead(b.name, cb.name, cb.Name)
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
				b.input = appendRead(b.input, d.partialJSON, d.PartialJSON)
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
		return provider.Response{}, fmt.Errorf("anthropic: %w (no message_stop)", provider.ErrStreamCut)
	}
	return a.response(), nil
}

// appendRead appends to dst a string the scan read: raw, its bytes in the
// event, or s, what encoding/json decoded it to (one of them is empty).
func appendRead(dst, raw []byte, s string) []byte {
	return append(append(dst, raw...), s...)
}

// block is one content block of the answer as it is read. Its bytes are
// the accumulator's and outlive the answer (readings); response copies
// out what the Response keeps.
type block struct {
	// kind is "text", "tool_use", "thinking" or "redacted_thinking";
	// other kinds are dropped
	kind      string
	id, name  buffer // a tool_use's
	text      buffer // a text's text, a thinking's thinking
	input     buffer // a tool_use's input, its partial JSON put together
	signature buffer // a thinking's signature
	data      string // a redacted_thinking's data
}

// buffer is a block's bytes, written to as a strings.Builder (a whole
// answer, completeWhole, fills blocks so), and kept when the
// block is reused: a strings.Builder grows a new one for every answer.
type buffer []byte

func (b *buffer) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}

func (b *buffer) WriteString(s string) (int, error) {
	*b = append(*b, s...)
	return len(s), nil
}

// String is the bytes as a new string, which the buffer's reuse leaves
// as it is.
func (b buffer) String() string { return string(b) }

func (b buffer) Len() int { return len(b) }

type accumulator struct {
	// blocks are the answer's blocks; past their length, the blocks of
	// an earlier answer, kept to be reused (start)
	blocks []*block
	usage  history.Usage
	stop   string
	done   bool
}

// start is a new block of the answer, the next: one kept from an earlier
// answer, emptied, when there is one.
func (a *accumulator) start(kind, id, name, text string) *block {
	var b *block
	if n := len(a.blocks); n < cap(a.blocks) {
		b = a.blocks[:n+1][n]
	}
	if b == nil {
		b = new(block)
	}
	b.empty(kind)
	b.id.WriteString(id)
	b.name.WriteString(name)
	b.text.WriteString(text)
	a.blocks = append(a.blocks, b)
	return b
}

// empty makes b a block of kind kind with nothing in it, keeping its
// buffers.
func (b *block) empty(kind string) {
	*b = block{kind: kind, id: b.id[:0], name: b.name[:0], text: b.text[:0], input: b.input[:0], signature: b.signature[:0]}
}

// response is the assistant message: text made well formed, tool calls as
// provider.ToolCall keeps them, thinking and redacted_thinking blocks as
// reasoning parts holding the block as the API wants it back, all in the
// order they came. It shares nothing with a: the tool calls' ids and
// names are parts of one new string, their inputs of one new buffer
// (three allocations a call were most of what a light round's answer
// cost to read).
func (a *accumulator) response() provider.Response {
	usage := a.usage
	msg := history.Message{Role: history.Assistant, Usage: &usage}
	if len(a.blocks) > 0 {
		// one allocation, not one a doubling (a Part is ~200 bytes);
		// nil for none, as before
		msg.Parts = make([]history.Part, 0, len(a.blocks))
	}
	var callsLen, inputsLen int
	for _, b := range a.blocks {
		if b.kind == "tool_use" {
			callsLen += len(b.id) + len(b.name)
			inputsLen += len(b.input)
		}
	}
	var calls strings.Builder
	calls.Grow(callsLen)
	inputs := make([]byte, 0, inputsLen)
	for _, b := range a.blocks {
		if b.kind == "tool_use" {
			calls.Write(b.id)
			calls.Write(b.name)
			inputs = append(inputs, b.input...)
		}
	}
	names := calls.String()
	at, in := 0, 0 // where the next call's id and input are
	for _, b := range a.blocks {
		switch b.kind {
		case "text":
			if t := result.WellFormed(b.text.String()); t != "" {
				msg.Parts = append(msg.Parts, history.Part{Type: history.TextPart, Text: t})
			}
		case "tool_use":
			id := names[at : at+len(b.id)]
			at += len(id)
			name := names[at : at+len(b.name)]
			at += len(name)
			input := inputs[in : in+len(b.input) : in+len(b.input)]
			in += len(input)
			msg.Parts = append(msg.Parts, provider.ToolCallInput(id, name, input))
		case "thinking", "redacted_thinking":
			msg.Parts = append(msg.Parts, reasoningPart(b.kind, b.text.String(), b.signature.String(), b.data))
		}
	}
	// "refusal": the API's streaming classifiers stopped the answer
	return provider.Response{Message: msg, StopReason: a.stop, Refused: a.stop == "refusal"}
}

// reading is what reading one streamed answer takes beyond the events:
// its accumulator and the event being decoded, kept from answer to
// answer (borrowReading) with the blocks and bytes they grew.
type reading struct {
	a  accumulator
	ev streamEvent
}

// readings holds the readings given back by release.
var readings sync.Pool

// maxKeptReading is the most bytes a reading given back may hold and
// still be kept (as sse's readers): one that read a long answer goes to
// the collector.
const maxKeptReading = 256 << 10

// blockSize is about the bytes of a block, without what its buffers hold.
const blockSize = 160

func borrowReading() *reading {
	if rd, _ := readings.Get().(*reading); rd != nil {
		return rd
	}
	return new(reading)
}

// release gives rd back for a later answer, when it is small enough to
// keep (empty); rd must not be used after it.
func (rd *reading) release() {
	if rd.empty() {
		readings.Put(rd)
	}
}

// empty makes rd ready for another answer, keeping nothing of the last
// but its blocks and their grown buffers, and reports whether those are
// small enough (maxKeptReading) to keep.
func (rd *reading) empty() bool {
	a := &rd.a
	size := 0
	for _, b := range a.blocks[:cap(a.blocks)] {
		size += 8
		if b != nil {
			size += blockSize + cap(b.id) + cap(b.name) + cap(b.text) + cap(b.input) + cap(b.signature)
		}
	}
	for _, b := range a.blocks {
		b.empty("")
	}
	*a = accumulator{blocks: a.blocks[:0]}
	rd.ev = streamEvent{}
	return size <= maxKeptReading
}
