package result

import (
	"strings"
	"testing"
)

// An output says how many ill-formed sequences its conversion repaired, on
// every path text takes: a string, a block, a file read whole, a file
// spilled as it is read; text that is not text at all is a file, not a
// repair.
func TestAnOutputSaysHowManySequencesWereRepaired(t *testing.T) {
	long := strings.Repeat("a line of output\n", 3000) // over the default cap
	for _, tc := range []struct {
		name string
		data func(t *testing.T) any
		want int
	}{
		{"valid text", func(*testing.T) any { return "fine é" }, 0},
		{"a string with two bad sequences", func(*testing.T) any { return "a line\xff of text with b\xc3(ad bytes in it" }, 2},
		{"a text block", func(*testing.T) any {
			return []Block{TextBlock{Text: "the first \xffblock"}, TextBlock{Text: "the second\xfe block"}}
		}, 2},
		{"a small file", func(t *testing.T) any { return textFile(t, "one\xfftwo") }, 1},
		{"a file spilled as it is read", func(t *testing.T) any { return textFile(t, long+"\xff"+long+"\xfe") }, 2},
		{"binary is a file, not a repair", func(*testing.T) any { return strings.Repeat("\xff\xfe", 100) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := One(Call{ID: "c", Result: Result{Data: tc.data(t)}}, Env{Store: &memStore{}, Now: fixedNow})
			if out.Repaired != tc.want {
				t.Fatalf("Repaired = %d, want %d (text %.80q)", out.Repaired, tc.want, out.Text)
			}
		})
	}
}

// An MCP result's own reply is kept in its output — its head, never more
// than ReplyKept bytes — beside the text the model reads.
func TestAnOutputKeepsTheHeadOfAnMCPReply(t *testing.T) {
	small := []byte(`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1}}`)
	big := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("é", ReplyKept) + `"}]}`)
	for _, tc := range []struct {
		name  string
		reply []byte
		head  string
	}{
		{"a small reply whole", small, string(small)},
		{"a big reply's head, cut within a character and made well formed", big, WellFormed(string(big[:ReplyKept]))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := FromMCP(tc.reply)
			if err != nil {
				t.Fatal(err)
			}
			out := One(Call{ID: "c", Result: r}, Env{Store: &memStore{}, Now: fixedNow})
			if out.Reply != tc.head || out.ReplySize != len(tc.reply) || len(out.Reply) > ReplyKept+3 {
				t.Fatalf("reply %d bytes kept of %d (want %d)", len(out.Reply), out.ReplySize, len(tc.head))
			}
		})
	}
	if out := One(Call{ID: "c", Result: Result{Data: "plain"}}, Env{}); out.Reply != "" || out.ReplySize != 0 {
		t.Fatalf("a Go tool's output has a reply: %q", out.Reply)
	}
}
