package approval

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode"
)

func TestVisibleWritesWhatAPersonWouldNotSeeAsEscapes(t *testing.T) {
	for _, c := range []struct{ in, want, lines string }{
		{"ls -la\tdir", "ls -la\tdir", ""},
		{"ls\nWhy you are asked: safe", `ls\nWhy you are asked: safe`, "ls\nWhy you are asked: safe"},
		{"ls\r\x1b[2K", `ls\r\x1b[2K`, ""},
		{"a\u202eb", `a\u202eb`, ""},
		{"a\x9bb", `a\x9bb`, ""},                     // a byte that is not UTF-8 (8-bit CSI)
		{"caf\u00e9 \uFFFD", "caf\u00e9 \uFFFD", ""}, // printable, and a real replacement character
		// a backslash the model wrote, doubled only where it would read
		// as one of the escapes above: a line break cannot pass for the
		// characters \n, nor those for a line break
		{"printf 'a\\nb'", `printf 'a\\nb'`, `printf 'a\nb'`},
		{"echo done\nrm -rf ~", `echo done\nrm -rf ~`, "echo done\nrm -rf ~"},
		{"echo done\\nrm -rf ~", `echo done\\nrm -rf ~`, `echo done\nrm -rf ~`},
		{`a\\n`, `a\\\\n`, `a\\n`}, // over lines, \n is never an escape
		{`\x1b[2K \u202e \U0001F600 \r \v \a \b \f`, `\\x1b[2K \\u202e \\U0001F600 \\r \\v \\a \\b \\f`, ""},
		{`C:\Users\me grep -E '\d+\s' \t \xZZ \u12 \e end\`, `C:\Users\me grep -E '\d+\s' \t \xZZ \u12 \e end\`, ""},
		// a backslash before a character written as an escape: an
		// escaped backslash then a line break is two commands, and
		// must not read as the characters \\n (one echo)
		{"echo ok\\\\\nrm -rf ~", `echo ok\\\\\nrm -rf ~`, "echo ok\\\\\nrm -rf ~"},
		// a run of backslashes is doubled whole, and only before what
		// reads as an escape: over lines, a line that ends in \\ is
		// shown so (three would read as a line continuation, hiding the
		// next command), and \\server or grep '\\.' as written
		{`echo ok\\`, `echo ok\\`, ""},
		{`\\server\share grep '\\.' file`, `\\server\share grep '\\.' file`, ""},
		{`\\\n`, `\\\\\\n`, `\\\n`},
		{"a\\\x1b", `a\\\x1b`, ""},
		{"a\\\u202e", `a\\\u202e`, ""},
		{"a\\\x9b", `a\\\x9b`, ""},
	} {
		if got := Visible(c.in); got != c.want {
			t.Errorf("Visible(%q) = %q, want %q", c.in, got, c.want)
		}
		lines := c.lines
		if lines == "" {
			lines = c.want
		}
		if got := VisibleLines(c.in); got != lines {
			t.Errorf("VisibleLines(%q) = %q, want %q", c.in, got, lines)
		}
	}
}

// No two texts are shown alike, on one line or over lines: every string
// of up to five characters of an alphabet made to collide (backslashes,
// the letters of escapes, hex digits, what is written as an escape).
func TestVisibleShowsNoTwoTextsAlike(t *testing.T) {
	for _, alphabet := range [][]string{
		{`\`, "n", "x", "1", "b", "u", "\n", "\x1b", "\u202e", "\x9b", "r", "\r"},
		{`\`, "n", "x", "u", "U", "a", "0", "e", "F", "\t", "\n", "\x1b", "\u202e", "\x9b", "\xe2", "\x80", "\uFFFD", "\U000E0041", "z"},
	} {
		noTwoAlike(t, alphabet, len(alphabet) < 15)
	}
}

// noTwoAlike walks every string of up to four characters of alphabet
// (five when deep) and fails on two that Visible, or VisibleLines, shows
// alike.
func noTwoAlike(t *testing.T, alphabet []string, deep bool) {
	depth := 4
	if deep {
		depth = 5
	}
	for name, show := range map[string]func(string) string{"Visible": Visible, "VisibleLines": VisibleLines} {
		seen := map[string]string{}
		bad := 0
		var walk func(s string, depth int)
		walk = func(s string, depth int) {
			v := show(s)
			if o, ok := seen[v]; ok && o != s && bad < 10 {
				bad++
				t.Errorf("%s(%q) and %s(%q) both show %q", name, o, name, s, v)
			}
			seen[v] = s
			if depth == 0 {
				return
			}
			for _, a := range alphabet {
				walk(s+a, depth-1)
			}
		}
		walk("", depth)
	}
}

// A call's input is shown as JSON of the same value on one line, with
// nothing in it that a person would not see as itself, and its own
// escapes kept; what is not JSON is shown as Visible shows it.
func TestVisibleJSONShowsTheSameValueWithNothingHidden(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{\n  \"command\": \"ls\\nrm -rf ~\",\n  \"path\": \"C:\\\\Users\"\n}", `{"command":"ls\nrm -rf ~","path":"C:\\Users"}`},
		{`{"a":"x` + "\u202e" + `y","b":"` + "\U000E0041" + `"}`, `{"a":"x\u202ey","b":"\udb40\udc41"}`},
		{`{"a":"\u202e"}`, `{"a":"\u202e"}`},
		{`{"a":1` + "\n" + `Why you are asked: safe`, `{"a":1\nWhy you are asked: safe`}, // not JSON
		{`{"a":"` + "\xff" + `"}`, `{"a":"\ufffd"}`},                                     // not UTF-8: what a decoder reads
		{"{\"code\":\"// tidy up\\nrm('~')\xff\"}", `{"code":"// tidy up\nrm('~')\ufffd"}`},
	} {
		got := VisibleJSON([]byte(c.in))
		if got != c.want {
			t.Errorf("VisibleJSON(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, r := range got {
			if !unicode.IsPrint(r) {
				t.Errorf("VisibleJSON(%q) = %q holds %U", c.in, got, r)
			}
		}
		var in, shown any
		if json.Unmarshal([]byte(c.in), &in) == nil {
			if err := json.Unmarshal([]byte(got), &shown); err != nil || !reflect.DeepEqual(in, shown) {
				t.Errorf("VisibleJSON(%q) = %q, not JSON of the same value (%v)", c.in, got, err)
			}
		}
	}
}

// Text myelin wrote, quoting the model's with %q, is shown with its
// backslashes as they are (a person copies the --allow flag a denial
// names) and only what would not show as itself escaped.
func TestPrintableKeepsBackslashesAndEscapesWhatIsHidden(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`The user can allow it by running myelin with --allow 'printf a\\nb\\n'.`, `The user can allow it by running myelin with --allow 'printf a\\nb\\n'.`},
		{"asked by default: no rule allows tool\nWhy you are asked: safe\x1b[2K\u202e", `asked by default: no rule allows tool\nWhy you are asked: safe\x1b[2K\u202e`},
		{"a\x9bb", `a\x9bb`},
	} {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
