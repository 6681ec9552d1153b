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
// …"), move a terminal's cursor or reorder what is shown. It must not be
// used on what is stored or sent to the model: that is the call as made.
func Visible(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r) || r == '\t':
			b.WriteRune(r)
		default:
			q := fmt.Sprintf("%+q", r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}
