package history

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// decodeParts reads the parts column: the JSON that result.JSON wrote for a
// []Part. It is a reader for that one shape — an array of flat objects with
// Part's keys — about five times as fast as encoding/json, which made
// reading a stored conversation of 10,000 messages take 45 ms. Anything
// else (a key it does not know, another layout) goes to json.Unmarshal, so
// it never reads less than encoding/json would; FuzzDecodeParts holds the
// two to the same answers.
func decodeParts(b []byte) ([]Part, error) {
	if parts, ok := fastParts(b); ok {
		return parts, nil
	}
	var parts []Part
	err := json.Unmarshal(b, &parts)
	return parts, err
}

type partScanner struct {
	b []byte
	i int
	// d, when set, is where the strings, values and parts read are
	// kept (Decoder); else each is allocated on its own
	d *Decoder
}

func (s *partScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *partScanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *partScanner) lit(word string) bool {
	s.ws()
	if strings.HasPrefix(string(s.b[s.i:min(len(s.b), s.i+len(word))]), word) {
		s.i += len(word)
		return true
	}
	return false
}

// str reads a JSON string (jsonstring.Read), well formed only: one with
// bytes that are not UTF-8 goes to encoding/json, which replaces them.
// Strings without escapes, the usual case, are one copy.
func (s *partScanner) str() (string, bool) {
	if !s.eat('"') {
		return "", false
	}
	if s.d != nil {
		out, n, ok := jsonstring.AppendRead(s.d.bytes, s.b[s.i:])
		s.i += n
		if !ok {
			return "", false
		}
		v := out[len(s.d.bytes):]
		s.d.bytes = out
		if len(v) == 0 {
			return "", true
		}
		// the bytes after the buffer's length are never written again
		str := unsafe.String(unsafe.SliceData(v), len(v))
		return str, utf8.ValidString(str)
	}
	v, n, ok := jsonstring.Read(s.b[s.i:])
	s.i += n
	return v, ok && utf8.ValidString(v)
}

// key reads a JSON string that is compared and let go, never kept (an
// object's key, a role or type to intern): without an escape, the usual
// case, it is the scanner's bytes themselves, not copied.
func (s *partScanner) key() (string, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[s.i+1 : j]
			s.i = j + 1
			if len(v) == 0 {
				return "", true
			}
			str := unsafe.String(unsafe.SliceData(v), len(v))
			return str, utf8.ValidString(str)
		case c == '\\' || c < 0x20:
			d := s.d
			s.d = nil // an escaped key: allocated, as before
			v, ok := s.str()
			s.d = d
			return v, ok
		}
	}
	return "", false
}

// kept is v, a value the scanner read, as the message keeps it: in the
// Decoder's buffer, else copied on its own.
func (s *partScanner) kept(v []byte) []byte {
	if s.d == nil {
		return append([]byte(nil), v...)
	}
	start := len(s.d.bytes)
	s.d.bytes = append(s.d.bytes, v...)
	return s.d.bytes[start:len(s.d.bytes):len(s.d.bytes)]
}

// value skips one JSON value and returns its bytes, checked with
// json.Valid.
func (s *partScanner) value() ([]byte, bool) {
	s.ws()
	start := s.i
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			if depth == 0 {
				if _, ok := s.key(); !ok { // checked, not kept
					return nil, false
				}
				return s.b[start:s.i], true
			}
			// inside an object or array: only the string's end is needed
			// here (json.Valid checks the whole value below), so skip it
			// without decoding it
			if !s.skipString() {
				return nil, false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return nil, false
			}
			if depth == 0 {
				s.i++
				v := s.b[start:s.i]
				return v, json.Valid(v)
			}
		case ',', ':', ' ', '\n', '\t', '\r':
			if depth == 0 {
				v := s.b[start:s.i]
				return v, len(v) > 0 && json.Valid(v)
			}
		}
		s.i++
	}
	v := s.b[start:s.i]
	return v, depth == 0 && len(v) > 0 && json.Valid(v)
}

// skipString moves past the JSON string at the scanner's position (its
// opening quote), to just after its closing quote, without decoding it; it
// reports false when the string does not end.
func (s *partScanner) skipString() bool {
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return true
		}
	}
	return false
}

func fastParts(b []byte) ([]Part, bool) { return fastPartsWith(b, nil) }

// fastPartsWith is fastParts keeping what it reads in d (Decoder), when d
// is not nil.
func fastPartsWith(b []byte, d *Decoder) ([]Part, bool) {
	s := &partScanner{b: b, d: d}
	parts, ok := s.parts()
	s.ws()
	return parts, ok && s.i == len(b)
}

// parts reads a []Part at the scanner's position.
func (s *partScanner) parts() ([]Part, bool) {
	if s.lit("null") {
		return nil, true
	}
	if !s.eat('[') {
		return nil, false
	}
	if s.d != nil {
		return s.d.readParts(s)
	}
	parts := make([]Part, 0, 2)
	if s.eat(']') {
		return parts, true
	}
	for {
		p, ok := s.part()
		if !ok {
			return nil, false
		}
		parts = append(parts, p)
		if s.eat(',') {
			continue
		}
		return parts, s.eat(']')
	}
}

// decodeMessage reads a stored message: the JSON result.JSON wrote for a
// Message, by the same fast reader, with encoding/json as its fallback.
func decodeMessage(b []byte) (Message, error) {
	if m, ok := fastMessage(b); ok {
		return m, nil
	}
	var m Message
	err := json.Unmarshal(b, &m)
	return m, err
}

func fastMessage(b []byte) (Message, bool) { return fastMessageWith(b, nil) }

// fastMessageWith is fastMessage keeping what it reads in d (Decoder),
// when d is not nil.
func fastMessageWith(b []byte, d *Decoder) (Message, bool) {
	var m Message
	s := &partScanner{b: b, d: d}
	if !s.eat('{') {
		return m, false
	}
	// a second "parts" or "usage" is encoding/json's to read: it decodes
	// it into the first (merging objects, filling elements in place)
	var hadParts, hadUsage bool
	for first := true; ; first = false {
		if first && s.eat('}') {
			break
		}
		key, ok := s.key()
		if !ok || !s.eat(':') {
			return m, false
		}
		switch key {
		case "role":
			v, ok := s.key()
			if !ok {
				return m, false
			}
			m.Role = internRole(v)
		case "parts":
			if hadParts {
				return m, false
			}
			hadParts = true
			if m.Parts, ok = s.parts(); !ok {
				return m, false
			}
		case "usage":
			if hadUsage {
				return m, false
			}
			hadUsage = true
			if m.Usage, ok = s.usage(); !ok {
				return m, false
			}
		case "cut":
			switch {
			case s.lit("true"):
				m.Cut = true
			case s.lit("false"):
			default:
				return m, false
			}
		case "time":
			from := s.i
			v, ok := s.key()
			if !ok || bytes.IndexByte(b[from:s.i], '\\') >= 0 {
				// time.Time's UnmarshalJSON reads no escape: an escaped
				// time is encoding/json's to refuse
				return m, false
			}
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return m, false
			}
			if name, _ := t.Zone(); name != "" && t.Location() != time.UTC && t.Location() != time.Local {
				// a zone named from v would keep v's bytes (it never
				// is, for this layout): parsed again from a copy
				t, _ = time.Parse(time.RFC3339, strings.Clone(v))
			}
			m.Time = t
		default:
			return m, false
		}
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return m, false
		}
		break
	}
	s.ws()
	return m, s.i == len(b)
}

// usage reads a Usage object of small non-negative integers.
func (s *partScanner) usage() (*Usage, bool) {
	if !s.eat('{') {
		return nil, false
	}
	u := &Usage{}
	for first := true; ; first = false {
		if first && s.eat('}') {
			return u, true
		}
		key, ok := s.key()
		if !ok || !s.eat(':') {
			return nil, false
		}
		n, ok := s.uint()
		if !ok {
			return nil, false
		}
		switch key {
		case "input":
			u.Input = n
		case "output":
			u.Output = n
		case "cache_read":
			u.CacheRead = n
		case "cache_write":
			u.CacheWrite = n
		case "cache_write_1h":
			u.CacheWrite1h = n
		default:
			return nil, false
		}
		if s.eat(',') {
			continue
		}
		return u, s.eat('}')
	}
}

func (s *partScanner) uint() (int, bool) {
	s.ws()
	start, n := s.i, 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' && s.i-start < 15 {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || (s.b[start] == '0' && s.i-start > 1) || (s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E' || (s.b[s.i] >= '0' && s.b[s.i] <= '9'))) {
		return 0, false
	}
	return n, true
}

func (s *partScanner) part() (Part, bool) {
	var p Part
	if !s.eat('{') {
		return p, false
	}
	hadImages := false // a second "images" is encoding/json's (it merges them)
	if s.eat('}') {
		return p, true
	}
	for {
		key, ok := s.key()
		if !ok || !s.eat(':') {
			return p, false
		}
		switch key {
		case "type":
			v, ok := s.key()
			if !ok {
				return p, false
			}
			p.Type = internType(v)
		case "text":
			if p.Text, ok = s.str(); !ok {
				return p, false
			}
		case "call_id":
			if p.CallID, ok = s.str(); !ok {
				return p, false
			}
		case "name":
			if p.Name, ok = s.str(); !ok {
				return p, false
			}
		case "spill_path":
			if p.SpillPath, ok = s.str(); !ok {
				return p, false
			}
		case "wire":
			if p.Wire, ok = s.str(); !ok {
				return p, false
			}
		case "signature":
			if p.Signature, ok = s.str(); !ok {
				return p, false
			}
		case "raw":
			v, ok := s.value()
			if !ok || string(v) == "null" {
				return p, false // let encoding/json say what null means
			}
			p.Raw = json.RawMessage(s.kept(v))
		case "input":
			v, ok := s.value()
			if !ok || string(v) == "null" {
				return p, false // let encoding/json say what null means
			}
			p.Input = json.RawMessage(s.kept(v))
		case "is_error":
			switch {
			case s.lit("true"):
				p.IsError = true
			case s.lit("false"):
			default:
				return p, false
			}
		case "images":
			if hadImages {
				return p, false
			}
			hadImages = true
			if p.Images, ok = s.images(); !ok {
				return p, false
			}
		case "permission":
			// rare next to the text it comes with: encoding/json reads
			// the record itself
			v, ok := s.value()
			if !ok || len(v) == 0 || v[0] != '{' || p.Permission != nil {
				return p, false // null, another type, a second one: encoding/json says
			}
			var r permission.Record
			if json.Unmarshal(v, &r) != nil {
				return p, false
			}
			p.Permission = &r
		case "files":
			// on the results of writes and edits only: encoding/json
			// reads the changes themselves
			v, ok := s.value()
			if !ok || len(v) == 0 || v[0] != '[' || p.Files != nil {
				return p, false // null, another type, a second one: encoding/json says
			}
			// into a variable of its own: &p.Files given to Unmarshal
			// would put every part read on the heap
			var files []FileChange
			if json.Unmarshal(v, &files) != nil {
				return p, false
			}
			p.Files = files
		default:
			return p, false
		}
		if s.eat(',') {
			continue
		}
		return p, s.eat('}')
	}
}

func (s *partScanner) images() ([]result.Image, bool) {
	if !s.eat('[') {
		return nil, false
	}
	imgs := []result.Image{}
	if s.eat(']') {
		return imgs, true
	}
	for {
		var img result.Image
		if !s.eat('{') {
			return nil, false
		}
		for first := true; ; first = false {
			if first && s.eat('}') {
				break
			}
			key, ok := s.key()
			if !ok || !s.eat(':') {
				return nil, false
			}
			var v string
			if key == "data" {
				v, ok = s.key() // decoded below, not kept
			} else {
				v, ok = s.str()
			}
			if !ok {
				return nil, false
			}
			switch key {
			case "mime_type":
				img.MIMEType = v
			case "data":
				data, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					return nil, false
				}
				img.Data = data
			default:
				return nil, false
			}
			if s.eat(',') {
				continue
			}
			if !s.eat('}') {
				return nil, false
			}
			break
		}
		imgs = append(imgs, img)
		if s.eat(',') {
			continue
		}
		return imgs, s.eat(']')
	}
}

// internType and internRole give the known values as their constants, so
// that a read conversation holds one copy of each, not one per message.
func internType(v string) PartType {
	for _, t := range []PartType{TextPart, ToolCallPart, ToolResultPart, ReasoningPart} {
		if v == string(t) {
			return t
		}
	}
	return PartType(strings.Clone(v)) // v may be a row's bytes (key)
}

func internRole(v string) Role {
	switch v {
	case string(User):
		return User
	case string(Assistant):
		return Assistant
	case string(Context):
		return Context
	}
	return Role(strings.Clone(v)) // v may be a row's bytes (key)
}
