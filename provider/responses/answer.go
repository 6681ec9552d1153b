package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/openai"
	"github.com/myelin-run/myelin/result"
)

// An answer is read item by item, by output_index: the deltas of an item
// stream on (text to onText, reasoning summaries to OnThinking) and build
// it up, and its response.output_item.done gives it whole — for a
// reasoning item the only place its encrypted content is complete. The
// response.completed event (or, not streamed, the response) gives the
// usage, the status, and any item whose done event did not come.

// outItem is the part of an output item this wire reads.
type outItem struct {
	Type             string          `json:"type"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        json.RawMessage `json:"arguments"` // a string on a function_call
	Content          []outContent    `json:"content"`
	Summary          []outSummary    `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	// Phase is an assistant message's phase ("commentary",
	// "final_answer"), which the API asks to have back with the message.
	Phase string `json:"phase"`
}

// outContent is a content part of a message or reasoning item.
type outContent struct {
	Type    string          `json:"type"`
	Text    jsonstring.Text `json:"text"`
	Refusal jsonstring.Text `json:"refusal"`
}

// outSummary is a summary part of a reasoning item.
type outSummary struct {
	Text string `json:"text"`
}

// item is one output item as it was read.
type item struct {
	kind         string // the item's type
	callID, name string
	phase        string          // a message's phase, from the item's added event
	text         strings.Builder // message text from deltas
	args         strings.Builder // function call arguments from deltas
	final        *outItem        // the whole item, once given
}

type accumulator struct {
	items      map[int64]*item
	usage      history.Usage
	status     string // "completed", "incomplete"
	incomplete string // incomplete_details.reason
	done       bool
	streamed   bool     // text or reasoning was passed on
	thinking   bool     // some reasoning was passed on
	thought    [3]int64 // the part it was from: output, summary and content index
	onText     func(string)
	onThinking func(string)
}

func (a *accumulator) at(i int64) *item {
	if a.items == nil {
		a.items = map[int64]*item{}
	}
	it := a.items[i]
	if it == nil {
		it = &item{}
		a.items[i] = it
	}
	return it
}

// response is the part of a response object the wire reads.
type response struct {
	Status            string          `json:"status"`
	Error             json.RawMessage `json:"error"` // {"code":...,"message":...} or null
	Output            []outItem       `json:"output"`
	Usage             *usage          `json:"usage"`
	IncompleteDetails struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// usage is the part of a response's usage the wire reads.
type usage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
}

// event is the part of a stream event the wire reads.
type event struct {
	Type         string          `json:"type"`
	OutputIndex  int64           `json:"output_index"`
	SummaryIndex int64           `json:"summary_index"`
	ContentIndex int64           `json:"content_index"`
	Delta        jsonstring.Text `json:"delta"`
	Item         *outItem        `json:"item"`
	Response     *response       `json:"response"`
	// an error event: its code and message, or its error object
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"`
}

// read reads a streamed answer from body, event by event (internal/sse),
// each decoded by decodeEvent, up to its response.completed (or
// response.incomplete); an event with an "error" object ends it with that
// error, as does an event of a type the wire reads that it cannot decode.
// Other events it cannot decode are passed over: the API adds event
// types.
func (a *accumulator) read(body io.Reader) error {
	r := sse.Borrow(body)
	defer r.Release()
	var ev event
	for !a.done && r.Next() {
		data := r.Event().Data
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			break
		}
		if err := decodeEvent(data, &ev); err != nil {
			var t struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(data, &t) == nil && !reads(t.Type) {
				continue
			}
			return fmt.Errorf("openai-responses: a malformed event in the stream, %.200q: %w", data, err)
		}
		if e := bytes.TrimSpace(ev.Error); len(e) > 0 && string(e) != "null" {
			return streamError(e, a.streamed)
		}
		if err := a.event(&ev, data); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("openai-responses: reading the stream: %w", err)
	}
	return nil
}

// reads reports whether the wire reads events of type t.
func reads(t string) bool {
	switch t {
	case "response.output_item.added", "response.output_item.done",
		"response.output_text.delta", "response.refusal.delta",
		"response.reasoning_summary_text.delta", "response.reasoning_text.delta",
		"response.function_call_arguments.delta",
		"response.completed", "response.incomplete", "response.failed", "error":
		return true
	}
	return false
}

// event reads one event of the stream; data is its JSON.
func (a *accumulator) event(ev *event, data []byte) error {
	switch ev.Type {
	case "response.output_item.added":
		if ev.Item == nil {
			return errors.New("openai-responses: an output item event without its item")
		}
		it := a.at(ev.OutputIndex)
		it.kind, it.callID, it.name, it.phase = ev.Item.Type, ev.Item.CallID, ev.Item.Name, ev.Item.Phase
	case "response.output_item.done":
		if ev.Item == nil {
			return errors.New("openai-responses: an output item event without its item")
		}
		it := a.at(ev.OutputIndex)
		it.kind, it.final = ev.Item.Type, ev.Item
	case "response.output_text.delta", "response.refusal.delta":
		delta := string(ev.Delta)
		it := a.at(ev.OutputIndex)
		if it.kind == "" {
			it.kind = "message"
		}
		it.text.WriteString(delta)
		if delta != "" {
			a.streamed = true
			if a.onText != nil {
				a.onText(result.WellFormed(delta))
			}
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		delta := string(ev.Delta)
		if delta == "" {
			break
		}
		// a summary part, or a reasoning text part, of its own: set apart
		key := [3]int64{ev.OutputIndex, ev.SummaryIndex, ev.ContentIndex}
		if a.onThinking != nil {
			if a.thinking && key != a.thought {
				a.onThinking("\n\n")
			}
			a.onThinking(result.WellFormed(delta))
		}
		a.thought, a.thinking, a.streamed = key, true, true
	case "response.function_call_arguments.delta":
		a.at(ev.OutputIndex).args.WriteString(string(ev.Delta))
	case "response.completed", "response.incomplete":
		if ev.Response == nil {
			return fmt.Errorf("openai-responses: a %s event without its response", ev.Type)
		}
		return a.finish(ev.Response)
	case "response.failed":
		if ev.Response == nil {
			return failed("", "", "", a.streamed)
		}
		code, message := errorFields(ev.Response.Error)
		return failed(code, message, rawError(ev.Response.Error), a.streamed)
	case "error":
		return failed(ev.Code, ev.Message, string(bytes.TrimSpace(data)), a.streamed)
	}
	return nil
}

// errorFields are the code and message of an error object.
func errorFields(raw json.RawMessage) (code, message string) {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	return e.Code, e.Message
}

// rawError is an error object's JSON, "" for none (null).
func rawError(raw json.RawMessage) string {
	if s := string(bytes.TrimSpace(raw)); s != "null" {
		return s
	}
	return ""
}

// finish reads the whole response: usage, status, and each output item
// not given whole before.
func (a *accumulator) finish(r *response) error {
	switch r.Status {
	case "failed":
		code, message := errorFields(r.Error)
		return failed(code, message, rawError(r.Error), a.streamed)
	case "cancelled":
		return fmt.Errorf("openai-responses: the response was cancelled")
	}
	if len(r.Output) > 0 {
		// The response's own output list is the answer: the stream's
		// items, numbered by its output_index, are what came before it.
		// Both are never taken — a stream whose numbering and the list
		// disagree (a proxy renumbering, an index from 1) had its text
		// doubled — so the streamed items give way to the list.
		clear(a.items)
		for i := range r.Output {
			it := a.at(int64(i))
			it.kind, it.final = r.Output[i].Type, &r.Output[i]
		}
	}
	if u := r.Usage; u != nil {
		cached := u.InputTokensDetails.CachedTokens
		written := u.InputTokensDetails.CacheWriteTokens
		a.usage = history.Usage{Input: max(0, u.InputTokens-cached-written), Output: u.OutputTokens, CacheRead: cached, CacheWrite: written}
	}
	a.status = r.Status
	a.incomplete = r.IncompleteDetails.Reason
	a.done = true
	return nil
}

// failed is the error of a response that failed, or of an error event,
// raw its error object (or the event, which holds its code and message)
// as the provider sent it, kept (openai.ErrorObject) for
// provider.Transient to read: a server_error or rate_limit_exceeded is
// transient. A refusal of the request as too long (before any output) is
// a provider.TooLongError.
func failed(code, message, raw string, streamed bool) error {
	msg := strings.TrimSpace(raw)
	var err error
	if msg == "" {
		err = fmt.Errorf("openai-responses: the response failed: %s: %s", code, message)
	} else {
		err = &provider.WireError{Msg: "openai-responses: the response failed: " + msg, Err: &openai.ErrorObject{Object: msg}}
	}
	if code == "context_length_exceeded" && !streamed {
		return &provider.TooLongError{Err: err}
	}
	return err
}

// response is the assistant message: its parts in the order of the output
// items (a reasoning item before the call or text it led to), text made
// well formed, tool calls as provider.ToolCall keeps them.
func (a *accumulator) response() provider.Response {
	msg := history.Message{Role: history.Assistant, Usage: &a.usage, Parts: make([]history.Part, 0, len(a.items))}
	idx := make([]int64, 0, len(a.items))
	for i := range a.items {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	calls, refused := 0, false
	for _, i := range idx {
		it := a.items[i]
		o := it.final
		switch it.kind {
		case "reasoning":
			if o == nil {
				continue // cut before it was whole: nothing to send back
			}
			var summary, content []string
			for _, s := range o.Summary {
				summary = append(summary, s.Text)
			}
			for _, c := range o.Content {
				content = append(content, result.WellFormed(string(c.Text)))
			}
			enc := ""
			if o.EncryptedContent != nil {
				enc = *o.EncryptedContent
			}
			msg.Parts = append(msg.Parts, Reasoning(summary, content, enc, o.EncryptedContent != nil))
		case "message":
			text, phase := it.text.String(), it.phase
			if o != nil {
				phase = o.Phase
				var b strings.Builder
				for _, c := range o.Content {
					switch c.Type {
					case "output_text":
						b.WriteString(string(c.Text))
					case "refusal":
						b.WriteString(string(c.Refusal))
						refused = true
					}
				}
				text = b.String()
			}
			if t := result.WellFormed(text); t != "" {
				msg.Parts = append(msg.Parts, Text(t, phase))
			}
		case "function_call":
			id, name, args := it.callID, it.name, it.args.String()
			if o != nil {
				id, name = o.CallID, o.Name
				if s, ok := argumentsOf(o.Arguments); ok {
					args = s
				}
			}
			msg.Parts = append(msg.Parts, provider.ToolCall(id, name, args))
			calls++
		}
	}
	if len(msg.Parts) == 0 {
		msg.Parts = nil // as when they were appended to nil
	}
	// An incomplete answer says so first, calls or not: a call cut by the
	// output limit has partial arguments (kept as text, answered with an
	// error naming them), and the stop reason is what says why.
	stop := "stop"
	switch {
	case a.status == "incomplete" && a.incomplete != "":
		stop = a.incomplete
	case a.status == "incomplete":
		stop = "incomplete"
	case refused:
		stop = "refusal" // the model's own refusal, in a message's content
	case calls > 0:
		stop = "tool_calls"
	}
	return provider.Response{Message: msg, StopReason: stop, Refused: refused || stop == "content_filter"}
}
