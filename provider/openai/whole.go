package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

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
	w := walk{b: raw}
	w.object(completionKeys, func(i int) {
		if i == 0 {
			c.choices = objects(&w, func(n int) wholeChoice { return w.choice(n == 0) })
			return
		}
		w.object(usageKeys, func(i int) {
			switch i {
			case 0:
				c.usage.prompt = sdkInt(w.value())
			case 1:
				c.usage.completion = sdkInt(w.value())
			case 2:
				w.object(detailsKeys, func(int) { c.usage.cached = sdkInt(w.value()) })
			}
		})
	})
	return nil
}

// choice reads the choice at w, an object or null: all the wire reads of
// the first, nothing of another.
func (w *walk) choice(first bool) (ch wholeChoice) {
	if !first {
		w.skip()
		return ch
	}
	w.object(wholeChoiceKeys, func(i int) {
		if i == 1 {
			ch.finish = sdkString(w.value())
			return
		}
		w.object(messageKeys, func(i int) {
			if i == 1 {
				ch.calls = objects(w, func(int) wholeCall { return w.call() })
				return
			}
			if v := w.value(); len(v) > 0 && v[0] == '[' {
				// a list: the only content the SDK left to the wire
				if err := ch.content.UnmarshalJSON(v); err != nil {
					ch.contentErr = fmt.Errorf("openai: the answer's content: %w", err)
				}
			} else {
				ch.content.Text = jsonstring.Text(sdkString(v))
			}
		})
	})
	return ch
}

// call reads the tool call at w, an object or null.
func (w *walk) call() (tc wholeCall) {
	w.object(wholeCallKeys, func(i int) {
		if i == 0 {
			tc.id = sdkString(w.value())
			return
		}
		w.object(functionKeys, func(i int) {
			if i == 0 {
				tc.name = sdkString(w.value())
			} else {
				tc.arguments = sdkString(w.value())
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

// walk passes over JSON that encoding/json checked, at b[i]: it reads
// nothing but where values begin and end, and checks nothing (of bytes
// that are not JSON it reads something, never past them nor forever).
// It must not be given JSON that was not checked.
type walk struct {
	b []byte
	i int
}

// ws passes white space.
func (w *walk) ws() {
	for w.i < len(w.b) && (w.b[w.i] == ' ' || w.b[w.i] == '\t' || w.b[w.i] == '\n' || w.b[w.i] == '\r') {
		w.i++
	}
}

// value passes the value at w and is its bytes.
func (w *walk) value() []byte {
	w.ws()
	start := w.i
	w.skip()
	return w.b[start:w.i]
}

// skip passes the value at w.
func (w *walk) skip() {
	w.ws()
	if w.i >= len(w.b) {
		return
	}
	switch w.b[w.i] {
	case '"':
		w.str()
	case '{', '[':
		depth := 0
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case '"':
				w.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			w.i++
			if depth == 0 {
				return
			}
		}
	default: // a number, true, false or null
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			w.i++
		}
	}
}

// str passes the string at w: to its first quote after an even number
// of backslashes (none escaping it).
func (w *walk) str() {
	w.i++
	for {
		q := bytes.IndexByte(w.b[w.i:], '"')
		if q < 0 {
			w.i = len(w.b)
			return
		}
		end := w.i + q
		n := 0
		for end-n-1 >= w.i && w.b[end-n-1] == '\\' {
			n++
		}
		w.i = end + 1
		if n%2 == 0 {
			return
		}
	}
}

// object reads the object at w, calling f with the index in keys of each
// member whose key is one of keys and w at its value, which f must pass:
// for a key given twice, the first member only, as gjson reads it; a key
// matched exactly. Other members, and a value that is not an object, are
// passed over.
func (w *walk) object(keys []string, f func(i int)) {
	w.ws()
	if w.i >= len(w.b) || w.b[w.i] != '{' {
		w.skip()
		return
	}
	w.i++
	var seen uint64
	for {
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] == '}' {
			w.i++
			return
		}
		raw := w.value()
		if len(raw) < 2 || raw[0] != '"' {
			return // not JSON: not from encoding/json
		}
		key, ok := raw[1:len(raw)-1], true
		if bytes.IndexByte(raw, '\\') >= 0 {
			k, unq := jsonstring.Unquote(raw)
			key, ok = []byte(k), unq
		}
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] != ':' {
			return
		}
		w.i++
		if i := indexOf(keys, key); ok && i >= 0 && seen&(1<<i) == 0 {
			seen |= 1 << i
			f(i)
		} else {
			w.skip()
		}
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == ',' {
			w.i++
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

// objects reads the array at w of objects, the n-th by read (with w at
// it), as the SDK read an array of structs: a null element is read as
// null (the zero value); an element that is anything else, or a value
// that is not an array, is nil (the SDK's decoder failed on it and left
// the field as it was).
func objects[T any](w *walk, read func(n int) T) []T {
	w.ws()
	if w.i >= len(w.b) || w.b[w.i] != '[' {
		w.skip()
		return nil
	}
	start := w.i
	w.i++
	out := []T{}
	for {
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] == ']' {
			w.i++
			return out
		}
		if c := w.b[w.i]; c != '{' && c != 'n' {
			// the SDK dropped the whole array: pass over all of it
			w.i = start
			w.skip()
			return nil
		}
		out = append(out, read(len(out)))
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == ',' {
			w.i++
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
