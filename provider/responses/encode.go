package responses

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/jsonstring"
)

// The request body is encoded here, straight to JSON, and handed to the
// SDK as the raw body: a reasoning item must go back as the bytes stored
// (history.Part.Raw), which the SDK's encoder would re-encode, and a tool's
// input schema as its own bytes. The shapes are the Responses API's own;
// TestRequestBytesArePinned pins them and TestEncodedItemsMatchTheSDKsShapes
// checks them against the SDK's typed params.

// encoder appends JSON to buf.
type encoder struct{ buf []byte }

func (e *encoder) str(s string) { e.buf = jsonstring.Append(e.buf, s, false) }
func (e *encoder) raw(s string) { e.buf = append(e.buf, s...) }

// items encodes the input items of one stored message, in the order of its
// parts, with sep before each; it returns the separator for the next item
// ("," once one was written).
func (e *encoder) items(m history.Message, sep string) string {
	item := func() {
		e.raw(sep)
		sep = ","
	}
	open := false    // an assistant message item is open: its text parts go in it
	var phase []byte // the open item's phase, as stored (nil: none)
	for i, p := range m.Parts {
		if open && (p.Type != history.TextPart || m.Role != history.Assistant || p.Text != "" && !bytes.Equal(phaseOf(p), phase)) {
			e.raw(`]}`)
			open = false
		}
		switch p.Type {
		case history.TextPart:
			if p.Text == "" {
				continue
			}
			if m.Role == history.Assistant {
				// consecutive text parts: one message, an output_text each
				if open {
					e.raw(`,`)
				} else {
					item()
					phase = phaseOf(p)
					e.raw(`{"type":"message","role":"assistant",`)
					if phase != nil {
						e.raw(`"phase":`)
						e.buf = append(e.buf, phase...)
						e.raw(`,`)
					}
					e.raw(`"content":[`)
					open = true
				}
				e.raw(`{"type":"output_text","text":`)
				e.str(p.Text)
				e.raw(`}`)
			} else {
				item()
				e.raw(`{"type":"message","role":"user","content":`)
				e.str(p.Text)
				e.raw(`}`)
			}
		case history.ReasoningPart:
			if m.Role != history.Assistant || !sendable(p) || !followed(m.Parts[i+1:]) {
				continue
			}
			item()
			e.buf = append(e.buf, p.Raw...) // as stored, byte for byte
		case history.ToolCallPart:
			if m.Role != history.Assistant {
				continue
			}
			item()
			e.raw(`{"type":"function_call","call_id":`)
			e.str(p.CallID)
			e.raw(`,"name":`)
			e.str(p.Name)
			e.raw(`,"arguments":`)
			e.str(arguments(p))
			e.raw(`}`)
		case history.ToolResultPart:
			if m.Role != history.User {
				continue
			}
			item()
			e.raw(`{"type":"function_call_output","call_id":`)
			e.str(p.CallID)
			e.raw(`,"output":`)
			if len(p.Images) == 0 {
				e.str(p.Text) // the plain string form: the text as stored
				e.raw(`}`)
				continue
			}
			e.raw(`[`)
			inner := ""
			if p.Text != "" {
				e.raw(`{"type":"input_text","text":`)
				e.str(p.Text)
				e.raw(`}`)
				inner = ","
			}
			for _, img := range p.Images {
				e.raw(inner + `{"type":"input_image","image_url":"data:`)
				e.buf = jsonstring.AppendEscaped(e.buf, img.MIMEType, false)
				e.raw(`;base64,`)
				e.buf = base64.StdEncoding.AppendEncode(e.buf, img.Data)
				e.raw(`"}`)
				inner = ","
			}
			e.raw(`]}`)
		}
	}
	if open {
		e.raw(`]}`)
	}
	return sep
}

// phaseOf is the phase a text part of this wire came with, as stored (a
// JSON string), or nil: another wire's part, or none, or anything that
// is not a JSON string, which is not sent.
func phaseOf(p history.Part) []byte {
	r := p.Raw
	if p.Wire != Wire || len(r) < 2 || r[0] != '"' || r[len(r)-1] != '"' || !utf8.Valid(r) {
		return nil
	}
	for _, c := range r[1 : len(r)-1] {
		if c == '"' || c == '\\' || c < 0x20 {
			return nil // a plain string is all a phase is
		}
	}
	return r
}

// sendable reports whether p is a reasoning item this wire sends back: one
// of its own wire, with the item stored.
func sendable(p history.Part) bool {
	return p.Type == history.ReasoningPart && p.Wire == Wire && len(p.Raw) > 0
}

// followed reports whether the parts after a reasoning item hold what it
// led to (text or a tool call): the API takes a reasoning item only with
// the item that follows it, and an answer cut after its reasoning has none.
func followed(rest []history.Part) bool {
	for _, p := range rest {
		if (p.Type == history.TextPart && p.Text != "") || p.Type == history.ToolCallPart {
			return true
		}
	}
	return false
}

// arguments is a tool call's arguments as the function_call item carries
// them: the JSON the model gave, or, when it was not JSON, what it gave
// (history keeps that in Text), or "{}".
func arguments(p history.Part) string {
	switch {
	case len(p.Input) > 0:
		return string(p.Input)
	case p.Text != "":
		return p.Text
	}
	return "{}"
}

// sizeHint is about how many bytes a message encodes to (a little more for
// text with escapes).
func sizeHint(m history.Message) int {
	n := 48
	for _, p := range m.Parts {
		n += 96 + len(p.Text) + len(p.Text)/16 + len(p.Input) + len(p.CallID) + len(p.Name) + len(p.Raw)
		for _, img := range p.Images {
			n += 96 + len(img.MIMEType) + base64.StdEncoding.EncodedLen(len(img.Data))
		}
	}
	return n
}

// schemas holds the checked, compacted form of each tool input schema
// seen, by its bytes: a tool's definition is the same from request to
// request, and checking and compacting it each time was a good part of
// encoding a light round's body. It is emptied when it grows past
// maxSchemas (tools are few; a caller that makes new ones without end must
// not make it grow without end).
var schemas struct {
	sync.Mutex
	m map[string][]byte
}

const maxSchemas = 1024

// schemaJSON is a tool's input schema as it is sent: its bytes without
// whitespace between tokens (as given when they have none), an empty one
// as {"type":"object","properties":{}}; an error when it is not a JSON
// object.
func schemaJSON(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	schemas.Lock()
	b, ok := schemas.m[string(raw)]
	schemas.Unlock()
	if ok {
		return b, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	var c bytes.Buffer
	b = raw
	if err := json.Compact(&c, raw); err == nil {
		b = c.Bytes()
	}
	schemas.Lock()
	if schemas.m == nil || len(schemas.m) >= maxSchemas {
		schemas.m = map[string][]byte{}
	}
	schemas.m[string(raw)] = b
	schemas.Unlock()
	return b, nil
}
