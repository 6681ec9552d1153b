package approval

import "testing"

func TestVisibleWritesWhatAPersonWouldNotSeeAsEscapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ls -la\tdir", "ls -la\tdir"},
		{"ls\nWhy you are asked: safe", `ls\nWhy you are asked: safe`},
		{"ls\r\x1b[2K", `ls\r\x1b[2K`},
		{"a\u202eb", `a\u202eb`},
		{"a\x9bb", `a\x9bb`},                     // a byte that is not UTF-8 (8-bit CSI)
		{"caf\u00e9 \uFFFD", "caf\u00e9 \uFFFD"}, // printable, and a real replacement character
		// a backslash the model wrote, doubled only where it would read
		// as one of the escapes above: a line break cannot pass for the
		// characters \n, nor those for a line break
		{"printf 'a\\nb'", `printf 'a\\nb'`},
		{"echo done\nrm -rf ~", `echo done\nrm -rf ~`},
		{"echo done\\nrm -rf ~", `echo done\\nrm -rf ~`},
		{`a\\n`, `a\\\\n`},
		{`\x1b[2K \u202e \U0001F600 \r \v \a \b \f`, `\\x1b[2K \\u202e \\U0001F600 \\r \\v \\a \\b \\f`},
		{`C:\Users\me grep -E '\d+\s' \t \xZZ \u12 \e end\`, `C:\Users\me grep -E '\d+\s' \t \xZZ \u12 \e end\`},
	} {
		if got := Visible(c.in); got != c.want {
			t.Errorf("Visible(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
