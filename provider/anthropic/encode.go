package anthropic

import (
	"encoding/base64"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/jsonstring"
)

// The messages of a request are encoded here, straight to JSON, and handed
// to the SDK as raw params: the SDK's reflective encoder took about 17 µs a
// message, which made a request of 10,000 messages take 170 ms to encode.
// The bytes are the Messages API's own shapes; TestRequestBytesArePinned
// pins them and TestEncodedMessagesMatchTheSDKsShapes checks them against
// the SDK's typed params.

// encoder appends the JSON of messages to buf; mark is the cache_control
// member of a marked block (CacheTTL.mark).
type encoder struct {
	buf  []byte
	mark string
}

func (e *encoder) str(s string) { e.buf = jsonstring.Append(e.buf, s, false) }
func (e *encoder) raw(s string) { e.buf = append(e.buf, s...) }

// message encodes one message (one role's consecutive messages merged,
// records among them skipped); mark puts a cache breakpoint on its last
// block.
func (e *encoder) message(role history.Role, msgs []history.Message, mark bool) {
	e.raw(`{"role":`)
	e.str(string(role))
	e.raw(`,"content":[`)
	n := 0
	total := -1 // the blocks sent, counted only when one is marked
	if mark {
		total = 0
		for i := range msgs {
			if !msgs[i].IsRecord() {
				total += blockCount(msgs[i].Parts)
			}
		}
	}
	for j := range msgs {
		m := &msgs[j]
		if m.IsRecord() {
			continue // a stored decision, never sent
		}
		for i := range m.Parts {
			if !sendable(m.Parts, i) {
				continue
			}
			if n > 0 {
				e.raw(",")
			}
			n++
			p := &m.Parts[i]
			if p.Type == history.ReasoningPart {
				// the block as the API gave it, byte for byte; never
				// marked (a thinking block takes no cache_control, and
				// only user messages are marked)
				e.buf = append(e.buf, p.Raw...)
				continue
			}
			e.block(p, n == total)
		}
	}
	e.raw("]}")
}

// blockCount is how many content blocks a message of parts sends.
func blockCount(parts []history.Part) int {
	n := 0
	for i := range parts {
		if sendable(parts, i) {
			n++
		}
	}
	return n
}

// sends reports whether a message of parts sends a block at all
// (blockCount > 0), looking no further than its first.
func sends(parts []history.Part) bool {
	for i := range parts {
		if sendable(parts, i) {
			return true
		}
	}
	return false
}

// sizeHint is about how many bytes a message encodes to (a little more for
// text with escapes).
func sizeHint(m *history.Message) int {
	n := 48
	for i := range m.Parts {
		p := &m.Parts[i]
		n += 96 + len(p.Text) + len(p.Text)/16 + len(p.Input) + len(p.CallID) + len(p.Name) + len(p.Raw)
		for _, img := range p.Images {
			n += 96 + len(img.MIMEType) + base64.StdEncoding.EncodedLen(len(img.Data))
		}
	}
	return n
}

func (e *encoder) block(p *history.Part, mark bool) {
	switch p.Type {
	case history.TextPart:
		e.raw(`{"type":"text","text":`)
		e.str(p.Text)
	case history.ToolCallPart:
		e.raw(`{"type":"tool_use","id":`)
		e.str(p.CallID)
		e.raw(`,"name":`)
		e.str(p.Name)
		e.raw(`,"input":`)
		if len(p.Input) == 0 {
			e.raw("{}")
		} else {
			e.raw(string(p.Input))
		}
	case history.ToolResultPart:
		e.raw(`{"type":"tool_result","tool_use_id":`)
		e.str(p.CallID)
		if p.IsError {
			e.raw(`,"is_error":true`)
		}
		e.raw(`,"content":`)
		if len(p.Images) == 0 {
			e.str(p.Text) // the string form: the text as stored
			break
		}
		e.raw("[")
		sep := ""
		if p.Text != "" {
			e.raw(`{"type":"text","text":`)
			e.str(p.Text)
			e.raw("}")
			sep = ","
		}
		for _, img := range p.Images {
			e.raw(sep + `{"type":"image","source":{"type":"base64","media_type":`)
			e.str(img.MIMEType)
			e.raw(`,"data":"`)
			e.buf = base64.StdEncoding.AppendEncode(e.buf, img.Data)
			e.raw(`"}}`)
			sep = ","
		}
		e.raw("]")
	}
	if mark {
		e.raw(e.mark)
	}
	e.raw("}")
}
