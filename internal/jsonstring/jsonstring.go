// Package jsonstring owns a JSON string's escapes, both ways: writing a
// text as a JSON string (Append), and reading one back with its escapes
// decoded and every other byte kept as it came (Read, Unquote, Text), so
// that invalid UTF-8 and surrogates reach the one conversion
// (result.WellFormed, contract §3) as they were sent. The wires' stream
// scans, history's reader of stored parts, result's reader of MCP blocks
// and mcp's streaming reader all decode escapes here, the same way.
//
// It imports nothing of myelin (package result, the bottom of the
// project, uses it), and it must not decide anything but the bytes of a
// string: what a string means is its caller's.
package jsonstring

import (
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Append appends s to buf as a JSON string, the way every wire
// that encodes its own body writes text: quotes, backslashes and control
// characters escaped, U+2028 and U+2029 as \u escapes, and an invalid byte
// (there should be none: every stored text is well formed) as \ufffd. With
// html set, <, > and & are escaped too, as encoding/json does — for a wire
// whose SDK passes the body through encoding/json again and must find
// nothing to change. It must not be used for anything but JSON bodies.
func Append(buf []byte, s string, html bool) []byte {
	buf = append(buf, '"')
	buf = AppendEscaped(buf, s, html)
	return append(buf, '"')
}

// plain and plainHTML say of each byte whether it stands for itself in a
// JSON string as Append writes one (without and with html): one lookup a
// byte where four to seven comparisons were (0.45× the time of the loop
// over a tool's output; docs/performance.md). A byte of a multi-byte
// character is not plain: it is looked at as a character.
var plain, plainHTML = plainBytes(false), plainBytes(true)

func plainBytes(html bool) (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&')
	}
	return t
}

// AppendEscaped is Append without the quotes: the inside of a
// JSON string.
func AppendEscaped(buf []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	isPlain := &plain
	if html {
		isPlain = &plainHTML
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if isPlain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"':
				buf = append(buf, `\"`...)
			case '\\':
				buf = append(buf, `\\`...)
			case '\n':
				buf = append(buf, `\n`...)
			case '\r':
				buf = append(buf, `\r`...)
			case '\t':
				buf = append(buf, `\t`...)
			default:
				buf = append(buf, `\u00`...)
				buf = append(buf, hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\u202`...)
			buf = append(buf, hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(buf, s[start:]...)
}

// Text is a string of an answer (a text delta) as a wire decodes it:
// unescaped as encoding/json does, but with its bytes that are not UTF-8
// kept as they came, so that result.WellFormed makes the text well formed
// once (contract §3: a surrogate written in UTF-8 form, as CESU-8 writes
// it, is with its pair the character they encode; encoding/json had made
// each of its bytes a U+FFFD). null leaves it as it is. It must not be
// used for text that is not made well formed after it.
type Text string

// UnmarshalJSON decodes the string in raw as encoding/json does, but for
// the bytes that are not UTF-8, which it keeps.
func (t *Text) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		return nil
	}
	s, ok := Unquote(raw)
	if !ok {
		var v string
		return json.Unmarshal(raw, &v) // the error encoding/json gives
	}
	*t = Text(s)
	return nil
}

// Unquote is the JSON string raw (quotes included, nothing around them)
// as Read decodes it; false when raw is not one string.
func Unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	s, n, ok := Read(raw[1:])
	return s, ok && n == len(raw)-1
}

// Read reads the string whose inside b begins with (b starts just after
// the opening quote) up to its closing quote: the string with its escapes
// decoded and every other byte kept as it is, invalid UTF-8 included, and
// how many bytes of b it took, the closing quote included. An escaped
// surrogate pair is the character it encodes; a lone escaped surrogate is
// U+FFFD, as encoding/json makes it. It is false when b ends before the
// closing quote, or holds a control character or an escape JSON does not
// have. A string without an escape, the usual case, costs one copy.
func Read(b []byte) (string, int, bool) {
	i := 0
	for i < len(b) {
		c := b[i]
		if c == '"' {
			return string(b[:i]), i + 1, true
		}
		if c == '\\' || c < 0x20 {
			break
		}
		i++
	}
	if i >= len(b) || b[i] != '\\' {
		return "", i, false
	}
	// where the string ends, escapes passed over: decoded, it is never
	// longer than that, so one allocation holds it
	end := i
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			end++
		}
		end++
	}
	out, n, ok := AppendRead(make([]byte, 0, min(end, len(b))), b)
	if !ok {
		return "", n, false
	}
	// out is not written to again: the string is its bytes
	return unsafe.String(unsafe.SliceData(out), len(out)), n, true
}

// AppendRead is Read appending the string to dst instead of allocating
// it: dst with the string's bytes after its length, how many bytes of b
// it took, and whether the string was well formed (when not, dst is
// returned as it was given, bytes past its length perhaps written). The
// string is never longer than the bytes of b it took, escapes and all,
// so a dst with that much room is never grown: a caller keeping many
// strings in one buffer makes sure of that room and the strings already
// in it stay where they are.
func AppendRead(dst, b []byte) ([]byte, int, bool) {
	i := 0
	for i < len(b) {
		c := b[i]
		if c == '"' {
			return append(dst, b[:i]...), i + 1, true
		}
		if c == '\\' || c < 0x20 {
			break
		}
		i++
	}
	if i >= len(b) || b[i] != '\\' {
		return dst, i, false
	}
	out := append(dst, b[:i]...)
	for i < len(b) {
		run := i
		for run < len(b) && b[run] != '"' && b[run] != '\\' && b[run] >= 0x20 {
			run++
		}
		out = append(out, b[i:run]...)
		i = run
		if i >= len(b) || b[i] < 0x20 {
			return dst, i, false
		}
		if b[i] == '"' {
			return out, i + 1, true
		}
		if i+1 >= len(b) {
			return dst, i, false
		}
		if c, ok := Escape(b[i+1]); ok {
			out = append(out, c)
			i += 2
			continue
		}
		if b[i+1] != 'u' {
			return dst, i, false
		}
		r, n, ok := UnicodeEscape(b[i+2:])
		if !ok {
			return dst, i, false
		}
		out = utf8.AppendRune(out, r)
		i += 2 + n
	}
	return dst, i, false
}

// Escape is the byte the one-letter escape \c stands for (\n, \", \/
// ...); false for a letter JSON has no such escape for, \u among them
// (UnicodeEscape reads that one).
func Escape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// UnicodeEscape reads the four hex digits b begins with, which follow a
// \u, and the \uXXXX that follows them when they are a high surrogate
// and it is the low one: the rune they stand for and how many bytes of b
// they take (4, or 10 for a pair). A lone surrogate is U+FFFD taking 4,
// so that what follows it is read as an escape of its own. False when b
// does not begin with four hex digits.
func UnicodeEscape[T string | []byte](b T) (rune, int, bool) {
	hi, ok := Hex4(b)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(hi) {
		return hi, 4, true
	}
	if hi < 0xDC00 && len(b) >= 10 && b[4] == '\\' && b[5] == 'u' {
		if lo, ok := Hex4(b[6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return utf16.DecodeRune(hi, lo), 10, true
		}
	}
	return utf8.RuneError, 4, true
}

// Hex4 is the rune of the four hex digits b begins with; false when b
// does not begin with four.
func Hex4[T string | []byte](b T) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for i := range 4 {
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
