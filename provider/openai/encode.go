package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/provider"
)

// The request body is encoded here, straight to JSON, and posted as it
// is: the SDK's reflective encoder, and the sjson patch that puts
// "stream" into a finished body, were most of a light round's time. The
// bytes are the ones the SDK sends for the typed params the test code's
// Params builds (the wire's request in the SDK's types), to the byte: its field order (a struct's fields in order, a
// map's keys sorted), no HTML escaping, a tool's input schema decoded into
// a map and encoded again (keys sorted, numbers as float64 prints them).
// TestBodyIsWhatTheSDKSendsForParams holds Body to the SDK's own
// marshalling for a table of requests.

// encoder appends JSON to buf.
type encoder struct{ buf []byte }

func (e *encoder) str(s string) { e.buf = jsonstring.Append(e.buf, s, false) }
func (e *encoder) raw(s string) { e.buf = append(e.buf, s...) }

// Body is the request body for req, the whole of what is sent: the SDK's
// marshalling of the typed params of req (Params, in the tests), with
// the answer's limit as max_tokens when legacyMaxTokens is set, else
// max_completion_tokens, and, when stream is set,
// "stream_options": {"include_usage": true} in its place and "stream":
// true last, as the SDK's streaming call adds them. The same Request gives
// the same bytes, every time. A tool whose input schema is not a JSON
// object is an error naming the tool.
func Body(req provider.Request, legacyMaxTokens, stream bool) ([]byte, error) {
	return bodyWith(req, legacyMaxTokens, stream, nil)
}

// bodyWith is Body built on the bytes prefixes kept of req's conversation
// (req.CacheKey) where they still hold: `{"messages":[`, the system
// prompt (the lead they are kept after) and every message of the last
// request (the wire joins no neighbours, so each message's bytes stand
// whatever follows). A nil prefixes encodes afresh.
func bodyWith(req provider.Request, legacyMaxTokens, stream bool, prefixes *prefix.Cache) ([]byte, error) {
	pre := prefixes.Get(req.CacheKey, req.System, req.Messages)
	first := 0 // the first message encoded here
	size := 192 + len(req.System) + len(req.Model)
	if pre != nil {
		first = pre.Len()
		size += len(pre.Bytes())
	}
	for _, t := range req.Tools {
		size += 96 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	for _, m := range req.Messages[first:] {
		size += sizeHint(m)
	}
	var e encoder
	if pre != nil {
		// the prefix's bytes, in the memory of the conversation's last
		// body when it was given back (Prefixes.Release)
		e.buf = prefixes.Buffer(req.CacheKey, pre, size)
	} else {
		e.buf = hugepage.Make[byte](0, size) // huge pages at a run's start (internal/hugepage)
	}
	n := 0 // messages written
	next := func() {
		if n == 0 {
			e.raw(`"messages":[`)
		} else {
			e.raw(",")
		}
		n++
	}
	if pre != nil {
		n = 1 // a prefix is kept only when it holds a message
	} else {
		e.raw("{")
		if req.System != "" {
			next()
			e.raw(`{"content":`)
			e.str(req.System)
			e.raw(`,"role":"system"}`)
		}
	}
	for _, m := range req.Messages[first:] {
		if m.IsRecord() {
			continue // a stored decision, never sent: as if absent
		}
		e.message(m, next)
	}
	if n > 0 && len(req.Messages) > first {
		prefixes.Put(req.CacheKey, req.System, pre, req.Messages[first:], e.buf, "")
	}
	if n > 0 {
		e.raw("],")
	}
	if req.Model != "" { // the SDK leaves an empty model out
		e.raw(`"model":`)
		e.str(req.Model)
		e.raw(",")
	}
	if legacyMaxTokens {
		e.raw(`"max_tokens":`)
	} else {
		e.raw(`"max_completion_tokens":`)
	}
	e.buf = strconv.AppendInt(e.buf, int64(max(1, req.MaxTokens)), 10)
	if stream {
		e.raw(`,"stream_options":{"include_usage":true}`)
	}
	if len(req.Tools) > 0 {
		e.raw(`,"tools":[`)
		for i, t := range req.Tools {
			schema, err := schemaJSON(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: its input schema is not a JSON object: %w", t.Name, err)
			}
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"function":{"name":`)
			e.str(t.Name)
			e.raw(`,"description":`)
			e.str(t.Description)
			if schema != nil {
				e.raw(`,"parameters":`)
				e.buf = append(e.buf, schema...)
			}
			e.raw(`},"type":"function"}`)
		}
		e.raw("]")
	}
	if stream {
		e.raw(`,"stream":true`)
	}
	e.raw("}")
	return e.buf, nil
}

// message encodes one stored message as the wire's messages, each after a
// call of next: an assistant message as one message (its text joined, its
// tool calls), none when it has neither; a user message as a message per
// text, a tool message per result, and one user message after them with
// the images of its results.
func (e *encoder) message(m history.Message, next func()) {
	if m.Role == history.Assistant {
		text, calls := 0, 0
		for _, p := range m.Parts {
			switch p.Type {
			case history.TextPart:
				text += len(p.Text)
			case history.ToolCallPart:
				calls++
			}
		}
		if text == 0 && calls == 0 {
			return // an empty answer: the API takes no empty message
		}
		next()
		e.raw("{")
		if text > 0 {
			e.raw(`"content":"`)
			for _, p := range m.Parts {
				if p.Type == history.TextPart {
					// the parts' texts joined: escaped one by one, the
					// same as escaping the whole
					e.buf = jsonstring.AppendEscaped(e.buf, p.Text, false)
				}
			}
			e.raw(`",`)
		}
		if calls > 0 {
			e.raw(`"tool_calls":[`)
			sep := ""
			for _, p := range m.Parts {
				if p.Type != history.ToolCallPart {
					continue
				}
				e.raw(sep + `{"id":`)
				e.str(p.CallID)
				e.raw(`,"function":{"arguments":`)
				if len(p.Input) == 0 {
					e.raw(`"{}"`)
				} else {
					e.buf = jsonstring.Append(e.buf, string(p.Input), false)
				}
				e.raw(`,"name":`)
				e.str(p.Name)
				e.raw(`},"type":"function"}`)
				sep = ","
			}
			e.raw(`],`)
		}
		e.raw(`"role":"assistant"}`)
		return
	}
	images := 0
	for _, p := range m.Parts {
		switch p.Type {
		case history.TextPart:
			next()
			e.raw(`{"content":`)
			e.str(p.Text)
			e.raw(`,"role":"user"}`)
		case history.ToolResultPart:
			next()
			e.raw(`{"content":`)
			e.str(p.Text)
			e.raw(`,"tool_call_id":`)
			e.str(p.CallID)
			e.raw(`,"role":"tool"}`)
			images += len(p.Images)
		}
	}
	if images == 0 {
		return
	}
	next()
	e.raw(`{"content":[`)
	sep := ""
	for _, p := range m.Parts {
		if p.Type != history.ToolResultPart {
			continue
		}
		for i, img := range p.Images {
			e.raw(sep + `{"text":`)
			e.str(fmt.Sprintf("[image %d of tool call %s]", i+1, p.CallID))
			e.raw(`,"type":"text"},{"image_url":{"url":"data:`)
			e.buf = jsonstring.AppendEscaped(e.buf, img.MIMEType, false)
			e.raw(`;base64,`)
			e.buf = base64.StdEncoding.AppendEncode(e.buf, img.Data)
			e.raw(`"},"type":"image_url"}`)
			sep = ","
		}
	}
	e.raw(`],"role":"user"}`)
}

// sizeHint is about how many bytes a message encodes to (a little more for
// text with escapes).
func sizeHint(m history.Message) int {
	n := 48
	for _, p := range m.Parts {
		n += 96 + len(p.Text) + len(p.Text)/16 + len(p.Input) + len(p.Input)/8 + len(p.CallID) + len(p.Name)
		for _, img := range p.Images {
			n += 160 + len(img.MIMEType) + len(p.CallID) + base64.StdEncoding.EncodedLen(len(img.Data))
		}
	}
	return n
}

// schemas holds the encoding of each tool input schema seen, by its
// bytes: a tool's definition is the same from request to request, and
// decoding and encoding it again each time was a good part of a light
// round. It is emptied when it grows past maxSchemas (tools are few; a
// caller that makes new ones without end must not make it grow without
// end).
var schemas struct {
	sync.Mutex
	m map[string][]byte
}

const maxSchemas = 1024

// schemaJSON is a tool's input schema as the SDK sends it: decoded into a
// map (shared.FunctionParameters) and encoded again by encoding/json
// without HTML escaping — keys sorted, numbers as float64 prints them —
// or nil for a JSON null (the SDK sends no "parameters" then). An error
// when it is not a JSON object.
func schemaJSON(raw json.RawMessage) ([]byte, error) {
	schemas.Lock()
	b, ok := schemas.m[string(raw)]
	schemas.Unlock()
	if ok {
		return b, nil
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if v != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		b = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	schemas.Lock()
	if schemas.m == nil || len(schemas.m) >= maxSchemas {
		schemas.m = map[string][]byte{}
	}
	schemas.m[string(raw)] = b
	schemas.Unlock()
	return b, nil
}
