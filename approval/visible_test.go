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
	} {
		if got := Visible(c.in); got != c.want {
			t.Errorf("Visible(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
