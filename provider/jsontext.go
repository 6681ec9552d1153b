package provider

import "unicode/utf8"

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
