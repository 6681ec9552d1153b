package provider

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendJSONString appends s to buf as a JSON string, the way every wire
// that encodes its own body writes text: quotes, backslashes and control
// characters escaped, U+2028 and U+2029 as \u escapes, and an invalid byte
// (there should be none: every stored text is well formed) as \ufffd. With
// html set, <, > and & are escaped too, as encoding/json does — for a wire
// whose SDK passes the body through encoding/json again and must find
// nothing to change. It must not be used for anything but JSON bodies.
func AppendJSONString(buf []byte, s string, html bool) []byte {
	buf = append(buf, '"')
	buf = AppendJSONEscaped(buf, s, html)
	return append(buf, '"')
}

// AppendJSONEscaped is AppendJSONString without the quotes: the inside of a
// JSON string.
func AppendJSONEscaped(buf []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf && (!html || c != '<' && c != '>' && c != '&') {
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

// JSONText is a string of an answer (a text delta) as a wire decodes it:
// unescaped as encoding/json does, but with its bytes that are not UTF-8
// kept as they came, so that result.WellFormed makes the text well formed
// once (contract §3: a surrogate written in UTF-8 form, as CESU-8 writes
// it, is with its pair the character they encode; encoding/json had made
// each of its bytes a U+FFFD). null leaves it as it is. It must not be
// used for text that is not made well formed after it.
type JSONText string

// UnmarshalJSON decodes the string in raw as encoding/json does, but for
// the bytes that are not UTF-8, which it keeps.
func (t *JSONText) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		return nil
	}
	s, ok := unquote(raw)
	if !ok {
		var v string
		return json.Unmarshal(raw, &v) // the error encoding/json gives
	}
	*t = JSONText(s)
	return nil
}

// unquote is the JSON string raw (quotes included) unescaped, with every
// byte outside an escape kept as it is; false when raw is not a string.
// An escaped surrogate pair is the character it encodes; a lone escaped
// surrogate is U+FFFD, as encoding/json makes it.
func unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	raw = raw[1 : len(raw)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), true
	}
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			b = append(b, raw[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(raw[i+1:])
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2, ok = hex4(raw[i+3:])
				}
				if p := utf16.DecodeRune(r, r2); ok && p != utf8.RuneError {
					r = p
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", false
		}
	}
	return string(b), true
}

// hex4 is the rune of the four hex digits b begins with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}
