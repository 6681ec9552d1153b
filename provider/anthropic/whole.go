package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"strconv"
	"strings"

	"github.com/myelin-run/myelin/internal/jsonscan"
	"github.com/myelin-run/myelin/internal/jsonstring"
)

// A whole answer (Config.NoStream) of 200 is read here — only the fields
// the wire reads — as anthropic-sdk-go v2.17.0 read it into its *Message
// for Messages.New, so that the wire does not link the SDK (issue 34):
// TestAWholeAnswerIsReadAsTheSDKReadsIt holds the two equal on the
// answers in testdata/messages, and FuzzAWholeAnswerIsReadAsTheSDKReadsIt
// on any bytes, error or not.
//
// The SDK decoded the body with encoding/json's Decoder into a **Message
// (its first JSON value checked whole, what follows it never read; its
// error as "error parsing response json: " and the Decoder's words), and
// Message's UnmarshalJSON read that value with apijson over gjson, as
// tolerant as they are, which decodeWhole mirrors:
//
//   - a value that is not an object (an array, a string, a number, a
//     boolean) is a message with nothing in it, not an error; so is a
//     block that is not an object (an element of "content" is always a
//     block, of type "" when it is not an object);
//   - a member of the wrong JSON type is its field's zero value — but a
//     string field takes any JSON value as gjson's String gives it (a
//     number's digits, or a float's shortest form, +Inf past float64's
//     range; true, false; an object's or array's JSON text), and an
//     integer field gjson's Int (a number, or a string of one, cut to its
//     integer part and to int64's range; 1 for true); null is the zero
//     value; a "content" that is not an array is no blocks;
//   - of a key given twice, the first is read (null included); keys match
//     exactly, after their escapes are decoded (not without case, as
//     encoding/json matches them);
//   - "input" is the value's JSON as it came, of any type (nil for null),
//     for every block, as the SDK kept it in c.Input.
//
// Decided otherwise, on purpose:
//
//   - a body of null is an error (errNullAnswer): the SDK's decoder left
//     Messages.New's *Message nil with no error, and Complete, reading
//     msg.Content, panicked;
//   - a string is decoded as the wire decodes every string
//     (jsonstring.Unquote: escapes decoded, every other byte kept as it
//     came, invalid UTF-8 included, as gjson kept it too), which differs
//     from gjson in one case: of a lone escaped surrogate followed by
//     another escape, gjson made U+FFFD of the two and dropped the second
//     escape's character; the wire keeps it (U+FFFD, then that
//     character), as its stream does (TestALoneSurrogateKeepsTheEscapeAfterIt).
//
// The streamed answer (scan.go) reads text and thinking as here, but an
// id, a name, a signature or a data as encoding/json does (a byte that is
// not UTF-8 made U+FFFD); a whole answer keeps those bytes, as the SDK
// did: result.WellFormed makes them well formed where they are shown.

// wholeMessage is the part of a Messages answer (a whole one, NoStream)
// the wire reads.
type wholeMessage struct {
	blocks     []wholeBlock
	stopReason string
	usage      struct{ input, output, cacheRead, cacheWrite, cacheWrite1h int64 }
}

// wholeBlock is the part of a content block the wire reads.
type wholeBlock struct {
	kind, id, name, text, thinking, signature, data string
	// input is the block's "input", its raw JSON as the SDK kept it
	// (c.Input); nil when absent or null. It is the bytes of the body
	// decodeWhole was given (or of encoding/json's copy of them), not a
	// copy of its own: it must not be written to, nor body while it is
	// read.
	input []byte
}

// errNullAnswer is decodeWhole's error for a body whose JSON value is
// null (where Complete, through the SDK, panicked).
var errNullAnswer = errors.New("error parsing response json: the answer is null, not a message")

// the keys read, by object
var (
	wholeMessageKeys  = []string{"content", "stop_reason", "usage"}
	wholeBlockKeys    = []string{"type", "id", "name", "text", "thinking", "signature", "data", "input"}
	wholeUsageKeys    = []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation"}
	cacheCreationKeys = []string{"ephemeral_1h_input_tokens"}
)

// decodeWhole reads body, the answer of 200, as anthropic-sdk-go v2.17.0
// read it into its Message: an error where the SDK's failed, in its words
// ("error parsing response json: " and encoding/json's Decoder's error),
// and errNullAnswer for null. Only body's first JSON value is read, as
// the SDK's Decoder read it; what follows it is not looked at. Its
// Content-Type is the caller's to check: the SDK decoded only an answer
// whose media type (mime.ParseMediaType's; "" when that fails) contains
// "application/json" or ends in "+json", and refused any other with
// "expected destination type of 'string' or '[]byte' for responses with
// content-type '%s' that is not 'application/json'" (the header's value).
//
// The first value is checked by jsonscan's Skip, which accepts only
// what encoding/json does; anything it refuses, and a body of more
// brackets than encoding/json's depth limit, goes through encoding/json's
// Decoder (decodeWholeChecked), for its error (or, should the two ever
// disagree, its reading).
func decodeWhole(body []byte) (wholeMessage, error) {
	if bytes.Count(body, []byte{'{'})+bytes.Count(body, []byte{'['}) <= maxWholeBrackets {
		s := jsonscan.Scanner{B: body}
		s.WS()
		start := s.I
		if s.Skip() {
			var m wholeMessage
			if string(body[start:s.I]) == "null" {
				return m, errNullAnswer
			}
			_ = m.UnmarshalJSON(body[start:s.I])
			return m, nil
		}
	}
	return decodeWholeChecked(body)
}

// decodeWholeChecked is decodeWhole through encoding/json's Decoder: its
// check and its errors, then UnmarshalJSON.
func decodeWholeChecked(body []byte) (wholeMessage, error) {
	var m *wholeMessage
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&m); err != nil {
		return wholeMessage{}, fmt.Errorf("error parsing response json: %w", err)
	}
	if m == nil {
		return wholeMessage{}, errNullAnswer
	}
	return *m, nil
}

// maxWholeBrackets is how many brackets ('{' and '[', in strings or not)
// a body may hold for decodeWhole to check it by jsonscan's Skip: not
// more than encoding/json's limit of nesting (10000), which Skip does not
// know, and a bound on Skip's recursion.
const maxWholeBrackets = 10000

// UnmarshalJSON reads raw, one JSON value checked as encoding/json
// checks it (not null, which decodeWhole refuses), as the SDK's Message
// read it: an object's members; anything else is a message with nothing
// in it. It never fails. Each byte is passed once.
func (m *wholeMessage) UnmarshalJSON(raw []byte) error {
	w := wholeWalk{b: raw}
	w.object(wholeMessageKeys, func(i int) {
		switch i {
		case 0:
			m.blocks = w.blocks()
		case 1:
			m.stopReason = sdkName(w.value())
		case 2:
			w.object(wholeUsageKeys, func(i int) {
				u := &m.usage
				switch i {
				case 0:
					u.input = sdkInt(w.value())
				case 1:
					u.output = sdkInt(w.value())
				case 2:
					u.cacheRead = sdkInt(w.value())
				case 3:
					u.cacheWrite = sdkInt(w.value())
				case 4:
					w.object(cacheCreationKeys, func(int) { u.cacheWrite1h = sdkInt(w.value()) })
				}
			})
		}
	})
	return nil
}

// blocks reads the value at w as the SDK read "content" into its
// []ContentBlockUnion: an array's elements, each a block (an object's
// members; anything else a block with nothing in it); nil for anything
// but an array.
func (w *wholeWalk) blocks() []wholeBlock {
	w.ws()
	if w.i >= len(w.b) || w.b[w.i] != '[' {
		w.skip()
		return nil
	}
	w.i++
	out := []wholeBlock{}
	for {
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] == ']' {
			w.i++
			return out
		}
		start := w.i
		out = append(out, w.block())
		if w.i == start {
			return out // not JSON (a '}' here): not from encoding/json
		}
		w.ws()
		if w.i < len(w.b) && w.b[w.i] == ',' {
			w.i++
		}
	}
}

// block reads the block at w, a JSON value of any type.
func (w *wholeWalk) block() (b wholeBlock) {
	w.object(wholeBlockKeys, func(i int) {
		v := w.value()
		switch i {
		case 0:
			b.kind = sdkName(v)
		case 1:
			b.id = sdkString(v)
		case 2:
			b.name = sdkString(v)
		case 3:
			b.text = sdkString(v)
		case 4:
			b.thinking = sdkString(v)
		case 5:
			b.signature = sdkString(v)
		case 6:
			b.data = sdkString(v)
		case 7:
			if string(v) != "null" {
				b.input = v[:len(v):len(v)]
			}
		}
	})
	return b
}

// wholeWalk passes over JSON checked as encoding/json checks it, at b[i]: it
// reads nothing but where values begin and end, and checks nothing (of
// bytes that are not JSON it reads something, never past them nor
// forever). It must not be given JSON that was not checked.
type wholeWalk struct {
	b []byte
	i int
}

// ws passes white space.
func (w *wholeWalk) ws() {
	for w.i < len(w.b) && (w.b[w.i] == ' ' || w.b[w.i] == '\t' || w.b[w.i] == '\n' || w.b[w.i] == '\r') {
		w.i++
	}
}

// value passes the value at w and is its bytes.
func (w *wholeWalk) value() []byte {
	w.ws()
	start := w.i
	w.skip()
	return w.b[start:w.i]
}

// skip passes the value at w.
func (w *wholeWalk) skip() {
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
func (w *wholeWalk) str() {
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
// for a key given twice, the first member only, as gjson's Map keeps it;
// a key matched exactly, its escapes decoded. Other members, and a value
// that is not an object, are passed over.
func (w *wholeWalk) object(keys []string, f func(i int)) {
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
		if i := keyIndex(keys, key); ok && i >= 0 && seen&(1<<i) == 0 {
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

// keyIndex is the index of key in keys, -1 when it is none of them.
func keyIndex(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

// sdkString is the string the SDK read from the JSON value v into a
// string field (gjson's String): a string's value (decoded as
// jsonstring.Unquote decodes it), an integer as its digits, another
// number as a float's shortest form (+Inf or -Inf past float64's range),
// true or false, an object's or array's JSON text, "" for null or
// nothing.
func sdkString(v []byte) string {
	switch {
	case len(v) == 0 || string(v) == "null":
		return ""
	case v[0] == '"':
		s, _ := jsonstring.Unquote(v)
		return s
	case v[0] == '-' || ('0' <= v[0] && v[0] <= '9'):
		digits := v
		if digits[0] == '-' {
			digits = digits[1:]
		}
		for _, c := range digits {
			if c < '0' || c > '9' {
				f, _ := strconv.ParseFloat(string(v), 64)
				return strconv.FormatFloat(f, 'f', -1, 64)
			}
		}
	}
	return string(v)
}

// sdkName is sdkString(v) for a value most often one of names (scan.go:
// the types of blocks, the stop reasons), kept as one string each so
// that an answer does not allocate them.
func sdkName(v []byte) string {
	if len(v) > 2 && v[0] == '"' {
		for _, n := range names {
			if len(v) == len(n)+2 && string(v[1:len(v)-1]) == n {
				return n
			}
		}
	}
	return sdkString(v)
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
		if n, ok := gjsonParseInt(s); ok {
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
		if n, ok := gjsonParseInt(string(v)); ok {
			return n
		}
		return floatToInt(f)
	}
	return 0
}

// gjsonParseInt reads s, digits after an optional "-", as gjson's
// parseInt does: past int64's range, its bound — past uint64's, as its
// check finds it (n*10+d less than n: a few numbers of 20 digits wrap
// past it and are read wrapped, as the SDK read them); false for
// anything else.
func gjsonParseInt(s string) (int64, bool) {
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

// jsonMedia reports whether an answer of Content-Type ct is one the SDK
// decoded as JSON: its media type (mime.ParseMediaType's, whatever its
// error: "" when there is none, the type before a bad parameter)
// contains "application/json" or ends in "+json".
func jsonMedia(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return strings.Contains(mt, "application/json") || strings.HasSuffix(mt, "+json")
}
