package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/provider"
)

// The request body is built here, straight to JSON, in the shapes of the
// generateContent API as the SDK's own types (genai.Content, genai.Part,
// genai.FunctionDeclaration) encode them: members in the order the SDK
// writes them (it encodes maps, so in key order), stored bytes spliced in
// as they are — a tool call's arguments as the model gave them, a thought
// part's Raw, a signature as the API sent it. TestBodyMatchesTheSDKsOwnEncoding
// checks the shapes against the SDK; TestRequestBytesArePinned pins them.

// wire is the name this wire gives its own shapes (history.Part.Wire).
const wire = "gemini"

// localPrefix begins the id this wire gives a function call the API sent
// without one (Gemini 2.x sends none; Gemini 3 does). Such an id is
// myelin's own: it is stored to tie the result to its call, and never sent.
const localPrefix = "gemini-local-"

// Options are what a Body holds besides the Request's own contents.
type Options struct {
	// Thoughts asks for the model's thought summaries
	// (generationConfig.thinkingConfig.includeThoughts), which stream to
	// Request.OnThinking and are stored as reasoning parts.
	Thoughts bool
}

// Body is the request body the wire sends for req, the whole of it:
// {"contents":...,"generationConfig":...,"systemInstruction":...,"tools":...},
// compact, members in key order and strings escaped as encoding/json
// writes them (`<`, `>`, `&` as \u003c...), as the SDK would send the
// same params. The same Request gives the same bytes, every time; a
// Provider's requests are these bytes too, part of them kept from the
// conversation's last request (prefix.go).
func Body(req provider.Request, o Options) ([]byte, error) {
	return bodyWith(req, o, nil)
}

// appendTail appends what follows the contents, the body's closing brace
// included: the generation config, the system instruction and the tool
// declarations.
func appendTail(e *encoder, req provider.Request, o Options) error {
	e.raw(`,"generationConfig":{"maxOutputTokens":`)
	e.buf = strconv.AppendInt(e.buf, int64(max(1, req.MaxTokens)), 10)
	if o.Thoughts {
		e.raw(`,"thinkingConfig":{"includeThoughts":true}`)
	}
	e.raw("}")
	if req.System != "" {
		e.raw(`,"systemInstruction":{"parts":[{"text":`)
		e.str(req.System)
		e.raw(`}],"role":"user"}`) // as the SDK writes it
	}
	if len(req.Tools) > 0 {
		e.raw(`,"tools":[{"functionDeclarations":[`)
		for i, t := range req.Tools {
			if !json.Valid(t.InputSchema) {
				return fmt.Errorf("gemini: tool %s: its input schema is not JSON: %.200q", t.Name, t.InputSchema)
			}
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"description":`)
			e.str(t.Description)
			e.raw(`,"name":`)
			e.str(t.Name)
			e.raw(`,"parametersJsonSchema":`)
			e.compact(t.InputSchema)
			e.raw("}")
		}
		e.raw("]}]")
	}
	e.raw("}")
	return nil
}

// modelMajor reads the major version of a Gemini model name.
// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
var modelMajor = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:models/)?gemini-(\d+)`) })

// nativeImages reports whether model takes images inside a function
// response (functionResponse.parts): the Gemini 3 series and later do,
// by Google's documentation of multimodal function responses; earlier
// models (and names that are not Gemini's) get them as inline data after
// the responses.
func nativeImages(model string) bool {
	m := modelMajor().FindStringSubmatch(model)
	if m == nil {
		return false
	}
	n, err := strconv.Atoi(m[1])
	return err == nil && n >= 3
}

// sizeHint is about the size msgs encode to, for one allocation of the
// body instead of a dozen doublings; calls counts their tool calls.
func sizeHint(msgs []history.Message) (size, calls int) {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == history.ToolCallPart {
				calls++
			}
			size += 96 + len(p.Text) + len(p.Text)/16 + len(p.Input) + len(p.Raw) + len(p.Signature) + len(p.CallID) + len(p.Name)
			for _, img := range p.Images {
				size += 96 + base64.StdEncoding.EncodedLen(len(img.Data))
			}
		}
	}
	return size, calls
}

// contentWriter writes the "contents" array: one content per run of
// messages of one role (consecutive user messages, as a prompt after
// results the model never answered, go as one), records and empty answers
// left out. It may start after contents already written (a kept prefix,
// the messages before), and marks where the last content it wrote began,
// for the next request of the conversation to keep what is before it.
type contentWriter struct {
	e      *encoder
	native bool
	before []history.Message // the messages whose contents are already written
	names  map[string]string // call id → function name, of the calls written here
	open   history.Role      // the role of the content being written; "" between contents
	n      int               // parts written in it
	after  []history.Part    // results whose images follow the responses
	prev   history.Role      // the role of the last content closed ("" for none)
	// The last content begun: the message (of those given to write) whose
	// part began it, and the length of the body before it (its comma left
	// out); -1 until one begins.
	lastMsg, lastCut int
	lastPrev         history.Role // prev when it began
}

// write writes msgs' contents. It is false when the first part it would
// write joins the last content already written (a kept prefix then does
// not fit the request; what it wrote is to be thrown away).
func (w *contentWriter) write(msgs []history.Message) (bool, error) {
	w.lastMsg, w.lastCut = -1, -1
	for i, m := range msgs {
		if m.IsRecord() {
			continue // a stored decision, never sent: as if absent
		}
		for _, p := range m.Parts {
			if !sent(m.Role, p) {
				continue
			}
			if p.Type == history.ToolCallPart {
				w.names[p.CallID] = p.Name // the latest call of this id: servers reuse ids
			}
			if w.open != m.Role {
				w.closeContent()
				if w.prev != "" && w.prev == m.Role {
					return false, nil // only after a kept prefix: a content ends where the role changes
				}
				w.lastMsg, w.lastCut, w.lastPrev = i, len(w.e.buf), w.prev
				if w.prev != "" {
					w.e.raw(",")
				}
				w.e.raw(`{"parts":[`)
				w.open, w.n = m.Role, 0
			}
			if w.n > 0 {
				w.e.raw(",")
			}
			w.n++
			if err := w.e.part(m.Role, p, w.name(p.CallID), w.native); err != nil {
				return false, err
			}
			if p.Type == history.ToolResultPart && len(p.Images) > 0 && !w.native {
				w.after = append(w.after, p)
			}
		}
	}
	w.closeContent()
	return true, nil
}

// name is the function name of the latest call of id written before:
// here, else in the messages before; id itself when there is none (the
// call is not in the request: its id stands in).
func (w *contentWriter) name(id string) string {
	if name, ok := w.names[id]; ok {
		return name
	}
	for i := len(w.before) - 1; i >= 0; i-- {
		m := w.before[i]
		if m.IsRecord() {
			continue
		}
		for j := len(m.Parts) - 1; j >= 0; j-- {
			if p := &m.Parts[j]; p.Type == history.ToolCallPart && p.CallID == id && sent(m.Role, *p) {
				return p.Name
			}
		}
	}
	return id
}

// closeContent ends the content being written, if any: the images that
// follow its responses, then its role.
func (w *contentWriter) closeContent() {
	if w.open == "" {
		return
	}
	e := w.e
	for _, p := range w.after {
		for i, img := range p.Images {
			e.raw(`,{"text":`)
			e.str(fmt.Sprintf("[image %d of tool call %s]", i+1, p.CallID))
			e.raw(`},{"inlineData":{"data":"`)
			e.buf = base64.StdEncoding.AppendEncode(e.buf, img.Data)
			e.raw(`","mimeType":`)
			e.str(img.MIMEType)
			e.raw("}}")
		}
	}
	w.after = w.after[:0]
	e.raw(`],"role":`)
	if w.open == history.Assistant {
		e.str("model")
	} else {
		e.str("user")
	}
	e.raw("}")
	w.prev, w.open = w.open, ""
}

// sent reports whether part p of a message of role is sent: text that is
// not empty, calls, results, and this wire's own reasoning.
func sent(role history.Role, p history.Part) bool {
	switch p.Type {
	case history.TextPart:
		return p.Text != ""
	case history.ToolCallPart:
		return role == history.Assistant
	case history.ToolResultPart:
		return role == history.User
	case history.ReasoningPart:
		return role == history.Assistant && p.Wire == wire && len(p.Raw) > 0
	}
	return false
}

// signature is p's thought signature when it is this wire's.
func signature(p history.Part) string {
	if p.Wire != wire {
		return ""
	}
	return p.Signature
}

// part writes p, a part of a message of role; name is the function name
// a result answers.
func (e *encoder) part(role history.Role, p history.Part, name string, native bool) error {
	switch p.Type {
	case history.TextPart:
		e.raw(`{"text":`)
		e.str(p.Text)
		if sig := signature(p); sig != "" {
			e.raw(`,"thoughtSignature":`)
			e.str(sig)
		}
		e.raw("}")
	case history.ReasoningPart:
		if !json.Valid(p.Raw) {
			return fmt.Errorf("gemini: a stored thought part is not JSON: %.200q", p.Raw)
		}
		e.compact(p.Raw) // as the API sent it
	case history.ToolCallPart:
		e.raw(`{"functionCall":{"args":`)
		if len(p.Input) == 0 || !json.Valid(p.Input) {
			e.raw("{}") // the model's arguments were not JSON; its result says so
		} else {
			e.compact(p.Input)
		}
		if p.CallID != "" && !strings.HasPrefix(p.CallID, localPrefix) {
			e.raw(`,"id":`)
			e.str(p.CallID)
		}
		e.raw(`,"name":`)
		e.str(p.Name)
		e.raw("}")
		if sig := signature(p); sig != "" {
			e.raw(`,"thoughtSignature":`)
			e.str(sig)
		}
		e.raw("}")
	case history.ToolResultPart:
		e.raw(`{"functionResponse":{`)
		if p.CallID != "" && !strings.HasPrefix(p.CallID, localPrefix) {
			e.raw(`"id":`)
			e.str(p.CallID)
			e.raw(",")
		}
		e.raw(`"name":`)
		e.str(name)
		if native && len(p.Images) > 0 {
			e.raw(`,"parts":[`)
			for i, img := range p.Images {
				if i > 0 {
					e.raw(",")
				}
				e.raw(`{"inlineData":{"data":"`)
				e.buf = base64.StdEncoding.AppendEncode(e.buf, img.Data)
				e.raw(`","mimeType":`)
				e.str(img.MIMEType)
				e.raw("}}")
			}
			e.raw("]")
		}
		// The API wants an object: the text goes whole under "output", or
		// under "error" for an error result, as the API documents.
		if p.IsError {
			e.raw(`,"response":{"error":`)
		} else {
			e.raw(`,"response":{"output":`)
		}
		e.str(p.Text)
		e.raw("}}}")
	}
	return nil
}

// encoder appends JSON to buf.
type encoder struct{ buf []byte }

func (e *encoder) str(s string) { e.buf = jsonstring.Append(e.buf, s, true) }
func (e *encoder) raw(s string) { e.buf = append(e.buf, s...) }

// compact appends stored JSON, which is valid: as it is when it is
// compact already (what this wire stores is), else compacted as
// encoding/json would write it.
func (e *encoder) compact(b []byte) {
	if !bytes.ContainsAny(b, " \t\r\n<>&") && !bytes.Contains(b, []byte("\u2028")) && !bytes.Contains(b, []byte("\u2029")) {
		e.buf = append(e.buf, b...)
		return
	}
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		e.buf = append(e.buf, b...)
		return
	}
	c := out.Bytes()
	// escape as encoding/json does, outside strings and in them alike
	// (`<`, `>`, `&` only occur in strings in valid JSON)
	for i := 0; i < len(c); i++ {
		switch {
		case c[i] == '<', c[i] == '>', c[i] == '&':
			e.buf = append(e.buf, `\u00`...)
			e.buf = append(e.buf, "0123456789abcdef"[c[i]>>4], "0123456789abcdef"[c[i]&0xF])
		case c[i] == 0xE2 && i+2 < len(c) && c[i+1] == 0x80 && (c[i+2] == 0xA8 || c[i+2] == 0xA9):
			e.buf = append(e.buf, `\u202`...)
			e.buf = append(e.buf, "0123456789abcdef"[c[i+2]&0xF])
			i += 2
		default:
			e.buf = append(e.buf, c[i])
		}
	}
}
