package anthropic

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/myelin-run/myelin/provider"
)

// decodeEvent fills ev (reset first) from data, the JSON of one stream
// event, exactly as json.Unmarshal(data, ev) would, or fails as it does.
//
// It is a scan of the few members streamEvent holds that skips the rest
// without building anything: encoding/json checked each event whole,
// then decoded it by reflection, which was the most of what reading a
// stream cost (BenchmarkReadStream). Whatever the scan does not take as
// plainly as encoding/json would — a string with an escape or not valid
// UTF-8, a number that is not a small integer, a key in another case
// (encoding/json matches keys without case), anything malformed — it
// hands to json.Unmarshal: for that string alone, or for the whole
// event. It must never accept an event json.Unmarshal refuses, nor read
// one otherwise (FuzzDecodeEventIsEncodingJSONs).
func decodeEvent(data []byte, ev *streamEvent) error {
	*ev = streamEvent{}
	s := scanner{b: data}
	if s.object(inEvent, ev) && s.atEnd() {
		return nil
	}
	*ev = streamEvent{}
	return json.Unmarshal(data, ev)
}

// The objects of an event the scan reads members of.
const (
	inEvent        = iota // the event
	inMessage             // message_start's message
	inStartUsage          // its usage
	inContentBlock        // content_block_start's block
	inDelta               // a delta
	inDeltaUsage          // message_delta's usage
)

// scanner reads JSON from b at i. Each method reports whether what it
// read was what it takes; false sends the event to json.Unmarshal.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) atEnd() bool {
	s.ws()
	return s.i == len(s.b)
}

// next skips white space and reports whether c is next, taking it if so.
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads an object, each member by member(in, ...).
func (s *scanner) object(in int, ev *streamEvent) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.plainString()
		if !ok || !s.next(':') {
			return false
		}
		s.ws()
		if !s.member(in, key, ev) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// isNull takes a null if one is next: into any field, it leaves the
// field as it is (zero, the event being reset).
func (s *scanner) isNull() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// member reads the value of key in an object of kind in.
func (s *scanner) member(in int, key []byte, ev *streamEvent) bool {
	if s.isNull() {
		// the field stays as it is, as in encoding/json, but for a
		// pointer, which null makes nil again
		if !slices.Contains(keysOf[in], string(key)) {
			return s.unknown(in, key)
		}
		if in == inDeltaUsage {
			switch string(key) {
			case "input_tokens":
				ev.Usage.InputTokens = nil
			case "cache_read_input_tokens":
				ev.Usage.CacheReadInputTokens = nil
			case "cache_creation_input_tokens":
				ev.Usage.CacheCreationInputTokens = nil
			}
		}
		return true
	}
	switch in {
	case inEvent:
		switch string(key) {
		case "type":
			return s.name(&ev.Type)
		case "index":
			return s.int(&ev.Index)
		case "message":
			return s.object(inMessage, ev)
		case "content_block":
			return s.object(inContentBlock, ev)
		case "delta":
			return s.object(inDelta, ev)
		case "usage":
			return s.object(inDeltaUsage, ev)
		}
		return s.other(in, key)
	case inMessage:
		if string(key) == "usage" {
			return s.object(inStartUsage, ev)
		}
		return s.other(in, key)
	case inStartUsage:
		u := &ev.Message.Usage
		switch string(key) {
		case "input_tokens":
			return s.int(&u.InputTokens)
		case "output_tokens":
			return s.int(&u.OutputTokens)
		case "cache_read_input_tokens":
			return s.int(&u.CacheReadInputTokens)
		case "cache_creation_input_tokens":
			return s.int(&u.CacheCreationInputTokens)
		}
		return s.other(in, key)
	case inContentBlock:
		cb := &ev.ContentBlock
		switch string(key) {
		case "type":
			return s.name(&cb.Type)
		case "id":
			return s.string(&cb.ID)
		case "name":
			return s.string(&cb.Name)
		case "text":
			return s.text(&cb.Text)
		case "thinking":
			return s.text(&cb.Thinking)
		case "signature":
			return s.string(&cb.Signature)
		case "data":
			return s.string(&cb.Data)
		}
		return s.other(in, key)
	case inDelta:
		d := &ev.Delta
		switch string(key) {
		case "type":
			return s.name(&d.Type)
		case "text":
			return s.text(&d.Text)
		case "partial_json":
			return s.string(&d.PartialJSON)
		case "thinking":
			return s.text(&d.Thinking)
		case "signature":
			return s.string(&d.Signature)
		case "stop_reason":
			return s.name(&d.StopReason)
		}
		return s.other(in, key)
	case inDeltaUsage:
		u := &ev.Usage
		switch string(key) {
		case "input_tokens":
			return s.intPtr(&u.InputTokens)
		case "output_tokens":
			return s.int(&u.OutputTokens)
		case "cache_read_input_tokens":
			return s.intPtr(&u.CacheReadInputTokens)
		case "cache_creation_input_tokens":
			return s.intPtr(&u.CacheCreationInputTokens)
		}
		return s.other(in, key)
	}
	return false
}

// keysOf are the keys of the members each kind of object has fields for.
var keysOf = [...][]string{
	inEvent:        {"type", "index", "message", "content_block", "delta", "usage"},
	inMessage:      {"usage"},
	inStartUsage:   {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"},
	inContentBlock: {"type", "id", "name", "text", "thinking", "signature", "data"},
	inDelta:        {"type", "text", "partial_json", "thinking", "signature", "stop_reason"},
	inDeltaUsage:   {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"},
}

// unknown reports whether key, which names no field of an object of kind
// in, is one the scan may pass over: not when encoding/json would take
// it for one of the fields' keys (it matches keys without case).
func (s *scanner) unknown(in int, key []byte) bool {
	for _, k := range keysOf[in] {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return true
}

// other skips the value of a key no field of an object of kind in names
// (unknown).
func (s *scanner) other(in int, key []byte) bool {
	return s.unknown(in, key) && s.skip()
}

// names are the values of the event's "type" members and of stop_reason,
// kept as one string each so that an event does not allocate them.
var names = []string{
	"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
	"text", "tool_use", "thinking", "redacted_thinking",
	"text_delta", "input_json_delta", "thinking_delta", "signature_delta",
	"end_turn", "max_tokens", "stop_sequence", "pause_turn", "refusal",
}

// name reads a string that is most often one of names.
func (s *scanner) name(dst *string) bool {
	start := s.i
	raw, ok := s.plainString()
	if !ok {
		s.i = start
		return s.string(dst)
	}
	for _, n := range names {
		if string(raw) == n {
			*dst = n
			return true
		}
	}
	*dst = string(raw)
	return true
}

// string reads a string into dst; one with an escape, or with bytes that
// are not UTF-8, is decoded by encoding/json (which unescapes it and
// replaces each bad byte with U+FFFD).
func (s *scanner) string(dst *string) bool {
	start := s.i
	if raw, ok := s.plainString(); ok {
		*dst = string(raw)
		return true
	}
	s.i = start
	if !s.skipString() {
		return false
	}
	return json.Unmarshal(s.b[start:s.i], dst) == nil
}

// text reads a text into dst as provider.JSONText decodes it: one with an
// escape, or with bytes that are not UTF-8, by its UnmarshalJSON (which
// keeps those bytes for result.WellFormed).
func (s *scanner) text(dst *provider.JSONText) bool {
	start := s.i
	if raw, ok := s.plainString(); ok {
		*dst = provider.JSONText(raw)
		return true
	}
	s.i = start
	if !s.skipString() {
		return false
	}
	return dst.UnmarshalJSON(s.b[start:s.i]) == nil
}

// plainString reads a string with no escape, no control character and
// only valid UTF-8, and is its bytes between the quotes; false leaves i
// anywhere.
func (s *scanner) plainString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	s.i++
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(raw) {
				return nil, false
			}
			return raw, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.i++
	}
	return nil, false
}

// skipString passes a string, escapes and all, checking them as JSON
// does.
func (s *scanner) skipString() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			s.i++
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if s.i+4 >= len(s.b) {
					return false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 4
			default:
				return false
			}
		}
		s.i++
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// int reads a small integer (up to 18 digits, so that it cannot
// overflow); any other number goes to encoding/json, which refuses a
// fraction or an exponent in an integer field.
func (s *scanner) int(dst *int64) bool {
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	start := s.i
	var n int64
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

func (s *scanner) intPtr(dst **int64) bool {
	var n int64
	if !s.int(&n) {
		return false
	}
	*dst = &n
	return true
}

// skip passes any value, checking it as JSON does.
func (s *scanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{':
		s.i++
		if s.next('}') {
			return true
		}
		for {
			s.ws()
			if !s.skipString() || !s.next(':') || !s.skip() {
				return false
			}
			if s.next(',') {
				continue
			}
			return s.next('}')
		}
	case c == '[':
		s.i++
		if s.next(']') {
			return true
		}
		for {
			if !s.skip() {
				return false
			}
			if s.next(',') {
				continue
			}
			return s.next(']')
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return s.skipNumber()
	}
	return false
}

func (s *scanner) literal(word string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

// skipNumber passes a number of JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) skipNumber() bool {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i >= len(s.b) {
		return false
	}
	if s.b[s.i] == '0' {
		s.i++
	} else if !s.digits() {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits passes one digit or more.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
