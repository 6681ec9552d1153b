// Package jsonscan reads a few members of a JSON value in place and
// passes over the rest without building anything: the scan each wire
// reads its stream's events with (Scanner). It decodes strings through
// package jsonstring and hands anything it does not take to
// encoding/json, so that a scan never reads JSON otherwise than
// encoding/json would. It imports nothing of myelin but jsonstring, and
// must not learn any wire's shapes: those are the wires' own.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/myelin-run/myelin/internal/jsonstring"
)

// Scanner reads JSON from B at I, for a wire's stream reader that takes
// a few members of each event and passes over the rest without building
// anything (encoding/json checks each event whole, then decodes it by
// reflection, which was most of what reading a stream cost). Each method
// reports whether what it read is what it takes; on false the caller
// hands the event, or the value, to encoding/json, so that a scan never
// accepts what encoding/json refuses, nor reads it otherwise (each wire's
// fuzz test holds its scan to that). It checks what it passes over as
// JSON does; it decodes nothing but plain strings and small integers.
type Scanner struct {
	B []byte // the JSON
	I int    // where the scan is in B
}

// WS passes white space.
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// AtEnd passes white space and reports whether nothing is left.
func (s *Scanner) AtEnd() bool {
	s.WS()
	return s.I == len(s.B)
}

// Next passes white space and reports whether c is next, taking it if so.
func (s *Scanner) Next(c byte) bool {
	s.WS()
	if s.I < len(s.B) && s.B[s.I] == c {
		s.I++
		return true
	}
	return false
}

// Object reads an object, calling member for each of its members with
// the scan at the member's value, which member must read (or pass over);
// it is false as soon as member is, or when what it reads is not an
// object.
func (s *Scanner) Object(member func(key []byte) bool) bool {
	if !s.Next('{') {
		return false
	}
	if s.Next('}') {
		return true
	}
	for {
		s.WS()
		key, ok := s.PlainString()
		if !ok || !s.Next(':') {
			return false
		}
		s.WS()
		if !member(key) {
			return false
		}
		if s.Next(',') {
			continue
		}
		return s.Next('}')
	}
}

// IsNull takes a null if one is next (encoding/json leaves a field as
// it is for a null, but for a pointer, which it makes nil).
func (s *Scanner) IsNull() bool {
	if s.I < len(s.B) && s.B[s.I] == 'n' && bytes.HasPrefix(s.B[s.I:], []byte("null")) {
		s.I += 4
		return true
	}
	return false
}

// PlainString reads a string with no escape, no control character and
// only valid UTF-8, and is its bytes between the quotes: exactly what
// encoding/json would decode it to. False leaves I anywhere.
func (s *Scanner) PlainString() ([]byte, bool) {
	b, i := s.B, s.I // a local index: s.I written back at every byte was slower
	if i >= len(b) || b[i] != '"' {
		return nil, false
	}
	i++
	start := i
	ascii := true
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case plainByte[c]:
		case c == '"':
			raw := b[start:i]
			s.I = i + 1
			if !ascii && !utf8.Valid(raw) {
				return nil, false
			}
			return raw, true
		case c == '\\' || c < 0x20:
			s.I = i
			return nil, false
		default:
			ascii = false
		}
	}
	s.I = i
	return nil, false
}

// plainByte marks the bytes a string holds as they are and PlainString
// passes at once: not a quote, a backslash, a control character, nor a
// byte of a character past ASCII (which it checks as UTF-8).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// SkipString passes a string, escapes and all, checking them as JSON
// does.
func (s *Scanner) SkipString() bool {
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return false
	}
	s.I++
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			s.I++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			s.I++
			if s.I >= len(s.B) {
				return false
			}
			switch s.B[s.I] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if s.I+4 >= len(s.B) {
					return false
				}
				for _, h := range s.B[s.I+1 : s.I+5] {
					if !isHex(h) {
						return false
					}
				}
				s.I += 4
			default:
				return false
			}
		}
		s.I++
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Int reads a small integer (up to 18 digits, so that it cannot
// overflow); false for any other number, which the caller hands to
// encoding/json (it refuses a fraction or an exponent in an integer
// field).
func (s *Scanner) Int(dst *int64) bool {
	neg := false
	if s.I < len(s.B) && s.B[s.I] == '-' {
		neg = true
		s.I++
	}
	start := s.I
	var n int64
	for s.I < len(s.B) && '0' <= s.B[s.I] && s.B[s.I] <= '9' {
		n = n*10 + int64(s.B[s.I]-'0')
		s.I++
	}
	digits := s.I - start
	if digits == 0 || digits > 18 || (digits > 1 && s.B[start] == '0') {
		return false
	}
	if s.I < len(s.B) {
		switch s.B[s.I] {
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

// Skip passes any value, checking it as JSON does.
func (s *Scanner) Skip() bool {
	s.WS()
	if s.I >= len(s.B) {
		return false
	}
	switch c := s.B[s.I]; {
	case c == '"':
		return s.SkipString()
	case c == '{':
		s.I++
		if s.Next('}') {
			return true
		}
		for {
			s.WS()
			if !s.SkipString() || !s.Next(':') || !s.Skip() {
				return false
			}
			if s.Next(',') {
				continue
			}
			return s.Next('}')
		}
	case c == '[':
		s.I++
		if s.Next(']') {
			return true
		}
		for {
			if !s.Skip() {
				return false
			}
			if s.Next(',') {
				continue
			}
			return s.Next(']')
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

func (s *Scanner) literal(word string) bool {
	if bytes.HasPrefix(s.B[s.I:], []byte(word)) {
		s.I += len(word)
		return true
	}
	return false
}

// skipNumber passes a number of JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) skipNumber() bool {
	if s.I < len(s.B) && s.B[s.I] == '-' {
		s.I++
	}
	if s.I >= len(s.B) {
		return false
	}
	if s.B[s.I] == '0' {
		s.I++
	} else if !s.digits() {
		return false
	}
	if s.I < len(s.B) && s.B[s.I] == '.' {
		s.I++
		if !s.digits() {
			return false
		}
	}
	if s.I < len(s.B) && (s.B[s.I] == 'e' || s.B[s.I] == 'E') {
		s.I++
		if s.I < len(s.B) && (s.B[s.I] == '+' || s.B[s.I] == '-') {
			s.I++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits passes one digit or more.
func (s *Scanner) digits() bool {
	start := s.I
	for s.I < len(s.B) && '0' <= s.B[s.I] && s.B[s.I] <= '9' {
		s.I++
	}
	return s.I > start
}

// ReadString reads a string into dst; one with an escape, or with bytes
// that are not UTF-8, is decoded by encoding/json (which unescapes it and
// replaces each bad byte with U+FFFD).
func (s *Scanner) ReadString(dst *string) bool {
	start := s.I
	if raw, ok := s.PlainString(); ok {
		*dst = string(raw)
		return true
	}
	s.I = start
	return s.SkipString() && json.Unmarshal(s.B[start:s.I], dst) == nil
}

// ReadText reads a text into dst as jsonstring.Text decodes it: one with
// an escape, or with bytes that are not UTF-8, by its UnmarshalJSON
// (which keeps those bytes for result.WellFormed).
func (s *Scanner) ReadText(dst *jsonstring.Text) bool {
	start := s.I
	if raw, ok := s.PlainString(); ok {
		*dst = jsonstring.Text(raw)
		return true
	}
	s.I = start
	return s.SkipString() && dst.UnmarshalJSON(s.B[start:s.I]) == nil
}

// Members reads an object as encoding/json decodes it into a struct whose
// fields keys name (at most 64 keys, none with an upper-case letter):
// each known member by known(i), with the scan at its value; the values
// of other keys passed over. A null for a known key is a no-op, as it is
// in encoding/json for a field of any type but json.RawMessage, which
// keeps it: the key at raw (-1 for none) has its null passed to known as
// any other value. It is false — the caller hands the whole to
// encoding/json — for a key given twice (encoding/json decodes the second
// value over the first) and for one encoding/json would match to a known
// key without case.
func (s *Scanner) Members(keys []string, raw int, known func(i int) bool) bool {
	var seen uint64
	return s.Object(func(key []byte) bool {
		i := indexOf(keys, key)
		if i < 0 {
			if mayFold(key) {
				for _, k := range keys {
					if bytes.EqualFold(key, []byte(k)) {
						return false
					}
				}
			}
			return s.Skip()
		}
		if seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		if i != raw && s.IsNull() {
			return true
		}
		return known(i)
	})
}

func indexOf(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

// mayFold reports whether key could match a key without an upper-case
// letter without case and not exactly: only one with an upper-case ASCII
// letter or a byte beyond ASCII can (the Kelvin sign folds to k, the long
// s to s). Most unknown keys are plain, and bytes.EqualFold against each
// known key was most of what passing over them cost.
func mayFold(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// Array reads an array, each element by elem; an empty one is made by
// empty, as encoding/json makes an empty slice, not nil. elem must refuse
// a null element (encoding/json leaves it as the zero value), which
// sends the whole to encoding/json.
func (s *Scanner) Array(elem func() bool, empty func()) bool {
	if !s.Next('[') {
		return false
	}
	if s.Next(']') {
		empty()
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !s.Next(',') {
			return s.Next(']')
		}
	}
}

// ReadInt reads a small integer into dst, as Int does.
func (s *Scanner) ReadInt(dst *int) bool {
	var n int64
	if !s.Int(&n) {
		return false
	}
	*dst = int(n)
	return true
}

// ReadName reads a string into dst as ReadString does, one of names as
// that string itself, so that a value a stream repeats (a type, a
// status) is not allocated each time.
func (s *Scanner) ReadName(dst *string, names []string) bool {
	start := s.I
	if raw, ok := s.PlainString(); ok {
		for _, n := range names {
			if string(raw) == n {
				*dst = n
				return true
			}
		}
		*dst = string(raw)
		return true
	}
	s.I = start
	return s.ReadString(dst)
}
