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
