package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Visible is s as a person is to see it on one line of a question or a
// record of a decision: every character a terminal or a host's dialog
// would not show as itself — control characters, escape sequences, line
// breaks, bidi overrides, bytes that are not UTF-8 — written as a Go
// escape ("\x1b", "\n", "\u202e", "\x9b"), tabs kept. What the model wrote
// (a command, a reason, a tool's name) goes through it before any Asker
// shows it, so that it cannot draw lines of the question itself ("Why
// you are asked: …"), move a terminal's cursor or reorder what is shown.
// A backslash the model wrote is doubled where what follows it would
// read as one of those escapes, or is itself written as one
// (`printf 'a\nb'` is shown `printf 'a\\nb'`), so that no two texts are
// shown alike: a line break, which ends a shell command, cannot pass for
// the two characters \n inside one. Any other backslash is kept as it is
// (`C:\Users`, `grep '\d+'`). It must not be used on what is stored or
// sent to the model: that is the call as made.
func Visible(s string) string { return visible(s, false, true) }

// VisibleLines is Visible for text shown over lines of its own (a
// command, a script, a file's content, each line indented under the
// question): a line break is kept as one, so the characters \n are shown
// as they are.
func VisibleLines(s string) string { return visible(s, true, true) }

// Printable is s on one line with every character a terminal would not
// show as itself written as an escape, as Visible writes them, and every
// backslash kept as it is: for text myelin wrote that quotes what the
// model wrote with Go's %q (the denial the model got, a permission
// record, the reason a question gives), whose quotes are unambiguous
// already and which a person may copy from (the --allow flag a denial
// names, a rule). What the model wrote, shown raw on a line where a
// person decides, goes through Visible.
func Printable(s string) string { return visible(s, false, false) }

// visible is Visible, with line breaks kept when lines is set and, when
// double is not set, every backslash kept. A run of backslashes is
// doubled whole, and only when what follows the run reads as an escape:
// so a run that does not (`\\server`, a line that ends in `\\`) is shown
// as it is, and the run's parity tells the two cases apart.
func visible(s string, lines, double bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			j := i
			for j < len(s) && s[j] == '\\' {
				j++
			}
			run := s[i:j]
			b.WriteString(run)
			if double && readsAsEscape(s[j:], lines) {
				b.WriteString(run)
			}
			n = j - i
		case shownAsItself(r, lines):
			b.WriteRune(r)
		default:
			q := fmt.Sprintf("%+q", r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// shownAsItself reports whether visible writes r as it is.
func shownAsItself(r rune, lines bool) bool {
	return unicode.IsPrint(r) || r == '\t' || lines && r == '\n'
}

// readsAsEscape reports whether a backslash followed by rest (which does
// not begin with one) would read as an escape visible writes: rest begins
// with a character it writes as an escape (a backslash before a line
// break shown "\n" reads "\\n"), or with a, b, f, n (on one line only),
// r or v, x and two hex digits, u and four, or U and eight.
func readsAsEscape(rest string, lines bool) bool {
	if rest == "" {
		return false
	}
	if r, n := utf8.DecodeRuneInString(rest); r == utf8.RuneError && n <= 1 || !shownAsItself(r, lines) {
		return true
	}
	hex := 0
	switch rest[0] {
	case 'a', 'b', 'f', 'r', 'v':
		return true
	case 'n':
		return !lines
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

// VisibleJSON is a call's input, JSON, as a person is to see it on one
// line: compacted (no line breaks between its values), and any character
// that would not be shown as itself — which in JSON can only stand inside
// a string — written as a JSON escape ("\u202e"; "\udb40\udc41" past
// U+FFFF), a byte that is not UTF-8 as "\ufffd" (what a JSON decoder
// makes of it, so what the tool reads). What is shown is JSON of the same
// value, whose own escapes ("\n", "\\") are kept as they are: they cannot
// be confused with a character, none being left. Input that is not JSON
// is shown as Visible shows it.
func VisibleJSON(raw []byte) string {
	var c bytes.Buffer
	if json.Compact(&c, raw) != nil {
		return Visible(string(raw))
	}
	var b strings.Builder
	for s := c.String(); s != ""; {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\ufffd`)
		case unicode.IsPrint(r):
			b.WriteString(s[:n])
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		s = s[n:]
	}
	return b.String()
}
