package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/myelin-run/myelin/internal/gjsonread"
	"github.com/myelin-run/myelin/internal/jsonstring"
)

// A whole answer (Config.NoStream) is posted by the Senders' Whole, with
// the streamed requests' headers, rules and limiter, and its body read
// here into completion — only the fields the wire reads — as openai-go
// read it into its ChatCompletion when the wire was built on the SDK (it
// no longer links it): TestAWholeAnswerIsDecodedAsTheSDKDecodedIt holds
// the two equal on the answers in testdata/completions, and
// FuzzAWholeAnswerIsReadAsTheSDKReadIt on any bytes.
//
// The SDK checked the body as encoding/json does and then read it with
// gjson, as tolerant as that: a member of the wrong JSON type is its
// field's zero value, not a malformed answer (an array of objects with
// an element that is neither an object nor null is dropped whole); of a
// key given twice the first is read; keys match exactly (not
// case-insensitively, as encoding/json would); an integer out of int64's
// range is cut to it. Only the first
// choice's content list is read as parts (content.go); a malformed one
// is the answer's error, in the words it had. A string is decoded as the
// wire decodes every string (jsonstring), which differs from gjson in
// one case: of a lone escaped surrogate before another escape, gjson
// dropped the second (TestALoneSurrogateKeepsTheEscapeAfterIt).

// completion is the part of a chat.completion the wire reads.
type completion struct {
	choices []wholeChoice // nil for none, or for a "choices" the SDK dropped
	usage   struct{ prompt, completion, cached int64 }
}

// wholeChoice is the part of a choice the wire reads; of a choice after
// the first, nothing but that it is one.
type wholeChoice struct {
	// content is the message's content: a string's text (or, of another
	// JSON value, the SDK's text of it), or a list's parts; contentErr
	// the error of a malformed list
	content    content
	contentErr error
	calls      []wholeCall
	finish     string
}

// wholeCall is the part of a tool call the wire reads.
type wholeCall struct{ id, name, arguments string }

// the keys read, by object (and the stream's usageKeys, detailsKeys and
// functionKeys, scan.go)
var (
	completionKeys  = []string{"choices", "usage"}
	wholeChoiceKeys = []string{"message", "finish_reason"}
	messageKeys     = []string{"content", "tool_calls"}
	wholeCallKeys   = []string{"id", "function"}
)

// decodeCompletion decodes a whole answer's body: its first JSON value,
// checked as the SDK's encoding/json Decoder checked it (what follows is
// not read; its error in the SDK's words), then read as the SDK read it
// (completion.UnmarshalJSON).
func decodeCompletion(body []byte) (completion, error) {
	var c completion
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&c); err != nil {
		return completion{}, fmt.Errorf("error parsing response json: %w", err)
	}
	return c, nil
}

// UnmarshalJSON reads raw, one JSON value encoding/json checked, as the
// SDK read it into its ChatCompletion: an object's members, null as
// nothing, anything else refused in the SDK's words. Each byte is passed
// once (but for the first choice's content, decoded after).
func (c *completion) UnmarshalJSON(raw []byte) error {
	if kind := notObject(raw); kind != "" {
		return fmt.Errorf("json: cannot unmarshal %s into Go value of type openai.ChatCompletion", kind)
	}
	w := gjsonread.Walker{B: raw}
	w.Object(completionKeys, func(i int) {
		if i == 0 {
			c.choices = objects(&w, func(n int) wholeChoice { return readChoice(&w, n == 0) })
			return
		}
		w.Object(usageKeys, func(i int) {
			switch i {
			case 0:
				c.usage.prompt = gjsonread.Int(w.Value())
			case 1:
				c.usage.completion = gjsonread.Int(w.Value())
			case 2:
				w.Object(detailsKeys, func(int) { c.usage.cached = gjsonread.Int(w.Value()) })
			}
		})
	})
	return nil
}

// readChoice reads the choice at w, an object or null: all the wire reads of
// the first, nothing of another.
func readChoice(w *gjsonread.Walker, first bool) (ch wholeChoice) {
	if !first {
		w.Skip()
		return ch
	}
	w.Object(wholeChoiceKeys, func(i int) {
		if i == 1 {
			ch.finish = gjsonread.Unquoted(w.Value())
			return
		}
		w.Object(messageKeys, func(i int) {
			if i == 1 {
				ch.calls = objects(w, func(int) wholeCall { return readCall(w) })
				return
			}
			if v := w.Value(); len(v) > 0 && v[0] == '[' {
				// a list: the only content the SDK left to the wire
				if err := ch.content.UnmarshalJSON(v); err != nil {
					ch.contentErr = fmt.Errorf("openai: the answer's content: %w", err)
				}
			} else {
				ch.content.Text = jsonstring.Text(gjsonread.Unquoted(v))
			}
		})
	})
	return ch
}

// readCall reads the tool call at w, an object or null.
func readCall(w *gjsonread.Walker) (tc wholeCall) {
	w.Object(wholeCallKeys, func(i int) {
		if i == 0 {
			tc.id = gjsonread.Unquoted(w.Value())
			return
		}
		w.Object(functionKeys, func(i int) {
			if i == 0 {
				tc.name = gjsonread.Unquoted(w.Value())
			} else {
				tc.arguments = gjsonread.Unquoted(w.Value())
			}
		})
	})
	return tc
}

// whole reads a decoded whole answer into a: its first choice's text,
// reasoning, tool calls and finish reason, and its usage.
func (a *accumulator) whole(c *completion) error {
	if len(c.choices) == 0 {
		return errors.New("openai: the answer has no choices")
	}
	ch := &c.choices[0]
	if ch.contentErr != nil {
		return ch.contentErr
	}
	a.text.WriteString(string(ch.content.Text))
	if ch.content.Thinking != "" {
		a.think(string(ch.content.Thinking))
	}
	a.skip(ch.content.Skipped)
	for _, tc := range ch.calls {
		a.calls = append(a.calls, &call{id: tc.id, name: tc.name})
		a.calls[len(a.calls)-1].args.WriteString(tc.arguments)
	}
	a.stop = ch.finish
	u := c.usage
	a.setUsage(int(u.prompt), int(u.completion), int(u.cached))
	return nil
}

// notObject is the kind of JSON value v is, in encoding/json's words,
// when it is neither an object nor null; "" when it is one of them.
func notObject(v []byte) string {
	switch {
	case len(v) == 0, v[0] == '{', v[0] == 'n':
		return ""
	case v[0] == '[':
		return "array"
	case v[0] == '"':
		return "string"
	case v[0] == 't', v[0] == 'f':
		return "bool"
	}
	return "number"
}

// objects reads the array at w of objects, the n-th by read (with w at
// it), as the SDK read an array of structs: a null element is read as
// null (the zero value); an element that is anything else, or a value
// that is not an array, is nil (the SDK's decoder failed on it and left
// the field as it was).
func objects[T any](w *gjsonread.Walker, read func(n int) T) []T {
	start := w.I
	out, dropped := []T{}, false
	if !w.Array(func(n int) bool {
		if c := w.B[w.I]; c != '{' && c != 'n' {
			dropped = true
			return false
		}
		out = append(out, read(n))
		return true
	}) {
		return nil
	}
	if dropped {
		// the SDK dropped the whole array: pass over all of it
		w.I = start
		w.Skip()
		return nil
	}
	return out
}
