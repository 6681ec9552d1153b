package window

import (
	"encoding/json"
	"maps"

	"github.com/myelin-run/myelin/history"
)

// edits are the Context records of a stored conversation, gathered: what
// requests send in place of results and inputs, and the summary in force.
type edits struct {
	results map[place]history.Cleared
	inputs  map[place]history.Cleared
	summary *history.Summary // the latest
	any     bool
	records bool // a Context record is among the messages gathered
}

// place is where a cleared result or input is: its stored message and its
// call id (which alone may repeat across rounds).
type place struct {
	msg    int
	callID string
}

// gather collects the edits stored in records.
func gather(records []history.Message) edits {
	var e edits
	e.add(records)
	return e
}

// add collects into e the edits stored in records, which come after those
// e holds.
func (e *edits) add(records []history.Message) {
	for i := range records {
		m := &records[i]
		if m.Role != history.Context {
			continue
		}
		e.records = true
		if m.Edit == nil {
			continue
		}
		e.addCleared(m.Edit.Cleared)
		if s := m.Edit.Summary; s != nil && (e.summary == nil || s.Through >= e.summary.Through) {
			e.summary, e.any = s, true
		}
	}
}

// addCleared collects into e the clearings cs, stored after those e holds.
func (e *edits) addCleared(cs []history.Cleared) {
	for _, c := range cs {
		e.any = true
		if c.Input {
			if e.inputs == nil {
				e.inputs = map[place]history.Cleared{}
			}
			e.inputs[place{c.Msg, c.CallID}] = c
			continue
		}
		if e.results == nil {
			e.results = map[place]history.Cleared{}
		}
		e.results[place{c.Msg, c.CallID}] = c
	}
}

// clone is e with maps of its own, so that adding to it leaves e as it is.
func (e edits) clone() edits {
	if e.results != nil {
		e.results = maps.Clone(e.results)
	}
	if e.inputs != nil {
		e.inputs = maps.Clone(e.inputs)
	}
	return e
}

// part is p, a part of stored message msg, as requests send it under e: a
// cleared result's placeholder (no images), a cleared input's placeholder
// object.
func (e edits) part(msg int, p history.Part) (history.Part, bool) {
	switch p.Type {
	case history.ToolResultPart:
		if c, ok := e.results[place{msg, p.CallID}]; ok {
			return history.Part{Type: history.ToolResultPart, CallID: p.CallID, Text: c.Text, IsError: p.IsError, SpillPath: c.Path}, true
		}
	case history.ToolCallPart:
		if c, ok := e.inputs[place{msg, p.CallID}]; ok {
			q := p
			q.Input, q.Text = json.RawMessage(c.Text), ""
			return q, true
		}
	}
	return p, false
}

// message is m, stored message msg, as requests send it under e; m itself
// is never changed.
func (e edits) message(msg int, m history.Message) history.Message {
	if len(e.results) == 0 && len(e.inputs) == 0 {
		return m
	}
	var parts []history.Part
	for i, p := range m.Parts {
		q, changed := e.part(msg, p)
		if changed && parts == nil {
			parts = make([]history.Part, len(m.Parts))
			copy(parts, m.Parts[:i])
		}
		if parts != nil {
			parts[i] = q
		}
	}
	if parts == nil {
		return m
	}
	m.Parts = parts
	return m
}

// first is the place of the first stored message requests send under e.
func (e edits) first() int {
	if e.summary == nil {
		return 0
	}
	return e.summary.Through
}

// summaryMessage is the user message that stands for the summarised
// messages.
func summaryMessage(s *history.Summary) history.Message {
	return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: s.Text}}}
}

// View is the messages a request built from stored sends: the stored
// messages with the edits of every Context record among them applied —
// cleared results and inputs replaced by their placeholders, the messages
// a summary stands for replaced by it — and the records themselves left
// out. It never changes stored. A request built from the same stored
// records is the same, in this process or after a restart (contract §12).
//
// When stored holds no record, the result is stored itself (its capacity
// cut to its length, so that an append copies): what it returns must not
// be changed.
func View(stored []history.Message) []history.Message {
	s := read(Whole(stored))
	return s.View()
}

// viewWith is View of t's messages before place end under e, the edits of
// all of t.
func viewWith(t *Tail, e edits, end int) []history.Message {
	if !e.records {
		v := t.span(0, end)
		return v[:len(v):len(v)]
	}
	if !e.any {
		v := t.span(0, end)
		out := make([]history.Message, 0, len(v))
		for _, m := range v {
			if m.Role != history.Context {
				out = append(out, m)
			}
		}
		return out
	}
	start := e.first()
	out := make([]history.Message, 0, end-min(start, end)+1)
	if e.summary != nil {
		out = append(out, summaryMessage(e.summary))
	}
	if start < end {
		for i, m := range t.span(start, end) {
			if m.Role != history.Context {
				out = append(out, e.message(start+i, m))
			}
		}
	}
	return out
}

// size is the bytes and images of what View sends of t's messages before
// place end, with the edits of the records before end applied.
func (t *Tail) size(end int) (bytes, images int) {
	return sizeUnder(t, t.gatheredTo(end), end)
}

// sizeUnder is the size of t's messages before place end under e, the
// edits of the records before end.
func sizeUnder(t *Tail, e edits, end int) (bytes, images int) {
	if e.summary != nil {
		bytes += MessageBytes(summaryMessage(e.summary))
	}
	b, i := sizeFrom(t, e, e.first(), end)
	return bytes + b, images + i
}

// sizeFrom is the bytes and images t's messages from place from to place
// end send under e.
func sizeFrom(t *Tail, e edits, from, end int) (bytes, images int) {
	if from >= end {
		return 0, 0
	}
	plain := len(e.results) == 0 && len(e.inputs) == 0
	msgs := t.span(from, end)
	for i := range msgs {
		m := &msgs[i]
		if m.Role == history.Context {
			continue
		}
		for j := range m.Parts {
			p := &m.Parts[j]
			if !plain && (p.Type == history.ToolResultPart || p.Type == history.ToolCallPart) {
				q, _ := e.part(from+i, *p)
				bytes += partBytes(q)
				images += len(q.Images)
				continue
			}
			if p.Type == history.ReasoningPart {
				bytes += partBytes(*p)
				continue
			}
			bytes += partOverhead + len(p.Text) + len(p.Name) + len(p.Input) + len(p.CallID) + len(p.Raw) + len(p.Signature)
			images += len(p.Images)
		}
	}
	return bytes, images
}
