package jsonstring_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/myelin-run/myelin/internal/jsonstring"
)

// comparedEscaped is AppendEscaped as it was written before its table of
// plain bytes: a byte compared with each escape in turn. It is what the
// table must give, byte for byte, and the benchmark's "before".
func comparedEscaped(buf []byte, s string, html bool) []byte {
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

// Every byte value, alone and among characters, with and without html:
// the table escapes exactly what the comparisons did.
func TestAppendEscapedEscapesEveryByteAsTheComparisonsDid(t *testing.T) {
	for c := 0; c < 256; c++ {
		for _, s := range []string{string(rune(0)) + string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "é\u2028z", string([]byte{byte(c)})} {
			for _, html := range []bool{false, true} {
				if got, want := jsonstring.AppendEscaped([]byte("x"), s, html), comparedEscaped([]byte("x"), s, html); !bytes.Equal(got, want) {
					t.Fatalf("byte %#x in %q (html %v): %q, want %q", c, s, html, got, want)
				}
			}
		}
	}
}

func FuzzAppendEscapedIsTheComparisons(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"uote\\ back", "ctl \x00\x01\x1f\t\n\r", "é 😀 \u2028 \u2029", "<&>", "bad \xff byte", "\xe2\x80"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		if got, want := jsonstring.AppendEscaped(nil, s, html), comparedEscaped(nil, s, html); !bytes.Equal(got, want) {
			t.Fatalf("%q (html %v): %q, want %q", s, html, got, want)
		}
	})
}

// BenchmarkAppendEscaped writes a tool's output (lines of code and log,
// a few quotes, tabs and non-ASCII characters) as the inside of a JSON
// string: the table (now), the comparisons it replaced (before), and the
// bytes appended as they are (the floor: a copy).
func BenchmarkAppendEscaped(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		sb.WriteString("\tif err := run(ctx, \"build\", args...); err != nil { // é → ok\n2026-12-06T10:00:00Z INFO worker=3 took 12.5ms path=/srv/app/main.go\n")
	}
	s := sb.String()
	buf := make([]byte, 0, 2*len(s))
	for _, c := range []struct {
		name string
		fn   func([]byte, string, bool) []byte
	}{
		{"table", jsonstring.AppendEscaped},
		{"comparisons", comparedEscaped},
		{"copy", func(buf []byte, s string, _ bool) []byte { return append(buf, s...) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				buf = c.fn(buf[:0], s, false)
			}
		})
	}
}
