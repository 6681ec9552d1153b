package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/myelin-run/myelin/internal/gjsonread"
	"github.com/myelin-run/myelin/internal/jsonscan"
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
	w := gjsonread.Walker{B: raw}
	w.Object(wholeMessageKeys, func(i int) {
		switch i {
		case 0:
			m.blocks = readBlocks(&w)
		case 1:
			m.stopReason = sdkName(w.Value())
		case 2:
			w.Object(wholeUsageKeys, func(i int) {
				u := &m.usage
				switch i {
				case 0:
					u.input = gjsonread.Int(w.Value())
				case 1:
					u.output = gjsonread.Int(w.Value())
				case 2:
					u.cacheRead = gjsonread.Int(w.Value())
				case 3:
					u.cacheWrite = gjsonread.Int(w.Value())
				case 4:
					w.Object(cacheCreationKeys, func(int) { u.cacheWrite1h = gjsonread.Int(w.Value()) })
				}
			})
		}
	})
	return nil
}

// readBlocks reads the value at w as the SDK read "content" into its
// []ContentBlockUnion: an array's elements, each a block (an object's
// members; anything else a block with nothing in it); nil for anything
// but an array.
func readBlocks(w *gjsonread.Walker) []wholeBlock {
	out := []wholeBlock{}
	if !w.Array(func(int) bool {
		start := w.I
		out = append(out, readBlock(w))
		return w.I != start // not JSON (a '}' here): not from encoding/json
	}) {
		return nil
	}
	return out
}

// readBlock reads the block at w, a JSON value of any type.
func readBlock(w *gjsonread.Walker) (b wholeBlock) {
	w.Object(wholeBlockKeys, func(i int) {
		v := w.Value()
		switch i {
		case 0:
			b.kind = sdkName(v)
		case 1:
			b.id = gjsonread.Unquoted(v)
		case 2:
			b.name = gjsonread.Unquoted(v)
		case 3:
			b.text = gjsonread.Unquoted(v)
		case 4:
			b.thinking = gjsonread.Unquoted(v)
		case 5:
			b.signature = gjsonread.Unquoted(v)
		case 6:
			b.data = gjsonread.Unquoted(v)
		case 7:
			if string(v) != "null" {
				b.input = v[:len(v):len(v)]
			}
		}
	})
	return b
}

// sdkName is gjsonread.Unquoted(v) (the SDK's string field) for a value
// most often one of names (scan.go: the types of blocks, the stop
// reasons), kept as one string each so that an answer does not allocate
// them.
func sdkName(v []byte) string {
	if len(v) > 2 && v[0] == '"' {
		for _, n := range names {
			if len(v) == len(n)+2 && string(v[1:len(v)-1]) == n {
				return n
			}
		}
	}
	return gjsonread.Unquoted(v)
}

// jsonMedia reports whether an answer of Content-Type ct is one the SDK
// decoded as JSON: its media type (mime.ParseMediaType's, whatever its
// error: "" when there is none, the type before a bad parameter)
// contains "application/json" or ends in "+json".
func jsonMedia(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return strings.Contains(mt, "application/json") || strings.HasSuffix(mt, "+json")
}
