package approval

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible is s as a person is to see it in a question or a record of a
// decision: every character a terminal or a host's dialog would not show
// as itself — control characters, escape sequences, line breaks, bidi
// overrides, bytes that are not UTF-8 — written as a Go escape ("\x1b",
// "\n", "\u202e", "\x9b"), tabs kept. What the model wrote (a command, a
// reason, a tool's name) goes through it before any Asker shows it, so
// that it cannot draw lines of the question itself ("Why you are asked:
// …"), move a terminal's cursor or reorder what is shown. A backslash
// the model wrote is doubled where what follows it would read as one of
// those escapes (`printf 'a\nb'` is shown `printf 'a\\nb'`), so that a
// line break, which ends a shell command, cannot pass for the two
// characters \n inside one; any other backslash is kept as it is
// (`C:\Users`, `grep '\d+'`). It must not be used on what is stored or
// sent to the model: that is the call as made.
func Visible(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' && readsAsEscape(s[i+1:]):
			b.WriteString(`\\`)
		case unicode.IsPrint(r) || r == '\t':
			b.WriteRune(r)
		default:
			q := fmt.Sprintf("%+q", r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// readsAsEscape reports whether a backslash followed by rest would read
// as an escape Visible writes (or as a doubled backslash): \a \b \f \n
// \r \v, \x and two hex digits, \u and four, \U and eight, or \\.
func readsAsEscape(rest string) bool {
	if rest == "" {
		return false
	}
	hex := 0
	switch rest[0] {
	case '\\', 'a', 'b', 'f', 'n', 'r', 'v':
		return true
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	default:
		return false
	}
	if len(rest) < 1+hex {
		return false
	}
	for _, c := range []byte(rest[1 : 1+hex]) {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return false
		}
	}
	return true
}
