package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/myelin-run/myelin/internal/jsonscan"
	"github.com/myelin-run/myelin/internal/jsonstring"
)

// A whole answer (Config.NoStream) is posted by the Senders' Whole, with
// the streamed requests' headers, rules and limiter, and its body read
// here into completion — only the fields the wire reads — as openai-go
// read it into its ChatCompletion when the wire was built on the SDK (it
// no longer links it): TestAWholeAnswerIsDecodedAsTheSDKDecodedIt holds
// the two equal on the answers in testdata/completions, and
// FuzzAWholeAnswerIsReadAsTheSDKReadIt on any JSON.
//
// The SDK checked the body as encoding/json does and then read it with
// gjson, as tolerant as that: a member of the wrong JSON type is its
// field's zero value, not a malformed answer (an array of objects with
// an element that is neither an object nor null is dropped whole); of a
// key given twice the first is read; keys match exactly, not without
// case; an integer out of int64's range is cut to it. Only the first
// choice's content list is read as parts (content.go); a malformed one
// is the answer's error, in the words it had.

// completion is the part of a chat.completion the wire reads.
type completion struct {
	choices []wholeChoice // nil for none, or for a "choices" the SDK dropped
	usage   struct{ prompt, completion, cached int64 }
}

// wholeChoice is the part of a choice the wire reads.
type wholeChoice struct {
	// content is the message's "content" as it came (nil: none); the
	// first choice's is read by accumulator.whole
	content []byte
	calls   []wholeCall
	finish  string
}

// wholeCall is the part of a tool call the wire reads.
type wholeCall struct{ id, name, arguments string }

// decodeCompletion decodes a whole answer's body: its first JSON value,
// checked as the SDK's encoding/json Decoder checked it (what follows is
// not read; its error in the SDK's words), then read as the SDK read it.
func decodeCompletion(body []byte) (completion, error) {
	var c completion
	var raw json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&raw); err != nil {
		return c, fmt.Errorf("error parsing response json: %w", err)
	}
	if kind := notObject(raw); kind != "" {
		// the SDK's error for a body that is not an object (nor null)
		return c, fmt.Errorf("error parsing response json: json: cannot unmarshal %s into Go value of type openai.ChatCompletion", kind)
	}
	members(raw, []string{"choices", "usage"}, func(i int, v []byte) {
		if i == 0 {
			c.choices = objects(v, readChoice)
			return
		}
		members(v, []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details"}, func(i int, v []byte) {
			switch i {
			case 0:
				c.usage.prompt = sdkInt(v)
			case 1:
				c.usage.completion = sdkInt(v)
			case 2:
				members(v, []string{"cached_tokens"}, func(_ int, v []byte) { c.usage.cached = sdkInt(v) })
			}
		})
	})
	return c, nil
}

// readChoice reads the choice obj, an object or null.
func readChoice(obj []byte) (ch wholeChoice) {
	members(obj, []string{"message", "finish_reason"}, func(i int, v []byte) {
		if i == 1 {
			ch.finish = sdkString(v)
			return
		}
		members(v, []string{"content", "tool_calls"}, func(i int, v []byte) {
			if i == 0 {
				ch.content = v
				return
			}
			ch.calls = objects(v, func(obj []byte) (tc wholeCall) {
				members(obj, []string{"id", "function"}, func(i int, v []byte) {
					if i == 0 {
						tc.id = sdkString(v)
						return
					}
					members(v, []string{"name", "arguments"}, func(i int, v []byte) {
						if i == 0 {
							tc.name = sdkString(v)
						} else {
							tc.arguments = sdkString(v)
						}
					})
				})
				return tc
			})
		})
	})
	return ch
}

// whole reads a decoded whole answer into a: its first choice's text,
// reasoning, tool calls and finish reason, and its usage.
func (a *accumulator) whole(c *completion) error {
	if len(c.choices) == 0 {
		return errors.New("openai: the answer has no choices")
	}
	ch := &c.choices[0]
	if len(ch.content) > 0 && ch.content[0] == '[' {
		var cont content
		if err := cont.UnmarshalJSON(ch.content); err != nil {
			return fmt.Errorf("openai: the answer's content: %w", err)
		}
		a.text.WriteString(string(cont.Text))
		if cont.Thinking != "" {
			a.think(string(cont.Thinking))
		}
		a.skip(cont.Skipped)
	} else {
		a.text.WriteString(sdkString(ch.content))
	}
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

// members calls f with the index in keys of each member of obj whose key
// is one of keys, and its value (null included): for a key given twice,
// the first member only, as gjson reads it; a key matched exactly. obj
// is JSON that encoding/json checked; nothing is called when it is not
// an object.
func members(obj []byte, keys []string, f func(i int, v []byte)) {
	s := jsonscan.Scanner{B: obj}
	if !s.Next('{') || s.Next('}') {
		return
	}
	var seen uint64
	for {
		s.WS()
		start := s.I
		key, plain := s.PlainString()
		if !plain {
			s.I = start
			if !s.SkipString() {
				return
			}
			k, ok := jsonstring.Unquote(obj[start:s.I])
			if !ok {
				return
			}
			key = []byte(k)
		}
		if !s.Next(':') {
			return
		}
		s.WS()
		vstart := s.I
		if !s.Skip() {
			return
		}
		if i := indexOf(keys, key); i >= 0 && seen&(1<<i) == 0 {
			seen |= 1 << i
			f(i, obj[vstart:s.I])
		}
		if !s.Next(',') {
			return
		}
	}
}

// indexOf is the index of key in keys, -1 when it is none of them.
func indexOf(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

// objects reads the array arr of objects, each by read, as the SDK read
// an array of structs: a null element is read as null (the zero value);
// an element that is anything else, or arr that is not an array, is nil
// (the SDK's decoder failed on it and left the field as it was).
func objects[T any](arr []byte, read func(obj []byte) T) []T {
	s := jsonscan.Scanner{B: arr}
	if !s.Next('[') {
		return nil
	}
	out := []T{}
	if s.Next(']') {
		return out
	}
	for {
		s.WS()
		start := s.I
		if !s.Skip() {
			return nil
		}
		v := arr[start:s.I]
		if v[0] != '{' && v[0] != 'n' {
			return nil
		}
		out = append(out, read(v))
		if !s.Next(',') {
			return out
		}
	}
}

// sdkString is the string the SDK read from the JSON value v into a
// string field (gjson's String): a string's value (decoded as
// jsonstring.Text decodes it), an integer as its digits, another number
// as a float's shortest form (+Inf past float64's range), true or false,
// an object's or array's JSON text, "" for null or nothing.
func sdkString(v []byte) string {
	if len(v) > 0 && v[0] == '"' {
		s, _ := jsonstring.Unquote(v)
		return s
	}
	return text(v)
}

// sdkInt is the integer the SDK read from the JSON value v into an
// integer field (gjson's Int): a number (or a string of one) cut to its
// integer part and to int64's range; 1 for true; 0 for anything else.
func sdkInt(v []byte) int64 {
	switch {
	case len(v) == 0:
		return 0
	case string(v) == "true":
		return 1
	case v[0] == '"':
		s, _ := jsonstring.Unquote(v)
		if n, ok := parseInt(s); ok {
			return n
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatToInt(f)
		}
		return 0
	case v[0] == '-' || ('0' <= v[0] && v[0] <= '9'):
		f, _ := strconv.ParseFloat(string(v), 64)
		if -(1<<53-1) <= f && f <= 1<<53-1 {
			return int64(f)
		}
		if n, ok := parseInt(string(v)); ok {
			return n
		}
		return floatToInt(f)
	}
	return 0
}

// parseInt reads s, digits after an optional "-", as gjson's parseInt
// does: past int64's range, its bound — past uint64's, as its check
// finds it (n*10+d less than n: a few numbers of 20 digits wrap past it
// and are read wrapped, as the SDK read them); false for anything else.
func parseInt(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		next := n*10 + uint64(c-'0')
		if next < n {
			// wrapped: the bound, when the rest are digits
			for ; i < len(s); i++ {
				if s[i] < '0' || s[i] > '9' {
					return 0, false
				}
			}
			n = math.MaxUint64
			break
		}
		n = next
	}
	switch {
	case neg && n > 1<<63:
		return math.MinInt64, true
	case neg:
		return -int64(n), true
	case n > math.MaxInt64:
		return math.MaxInt64, true
	}
	return int64(n), true
}

// floatToInt is f cut to its integer part, within int64's range (gjson's
// f2i).
func floatToInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f < math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
