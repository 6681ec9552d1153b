package workspace

import (
	"bytes"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/result"
)

// trickyUTF8 are byte strings whose repair depends on what surrounds each
// byte: pairs and lone halves of surrogates in UTF-8 form, cut sequences,
// runs of continuation bytes, 4-byte characters.
var trickyUTF8 = []string{
	"plain ascii text\n",
	"\xed\xa0\x80\xed\xb0\x80",             // a surrogate pair: one character
	"\xed\xa0\x80\xed\xa0\x80\xed\xb0\x80", // a lone high, then a pair
	"\xed\xb0\x80x",                        // a lone low
	"\xe2\x82",                             // a cut 3-byte sequence
	"\xf0\x9f\x98\x80",                     // 😀
	"\xf0\x9f\x98",                         // a cut 4-byte sequence
	"\x80\x80\x80\x80\x80\x80\x80\x80",     // continuation bytes alone
	"\xc0\xaf\xff\xfe",                     // bytes no character starts with
	"é日本\r\n",
}

// A text cut where safeCut says, each part made well formed on its own,
// is the text made well formed whole: the stream's counts are the whole
// file's.
func TestSafeCutGivesTheWholeTextsRepair(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	for i := 0; i < 2000; i++ {
		var b bytes.Buffer
		for b.Len() < 40 {
			b.WriteString(trickyUTF8[rng.Intn(len(trickyUTF8))])
		}
		s := b.Bytes()
		for end := 13; end <= len(s); end++ {
			c := safeCut(s[:end])
			if c <= 0 || c > end {
				t.Fatalf("safeCut(%q) = %d", s[:end], c)
			}
			if got, want := result.WellFormed(string(s[:c]))+result.WellFormed(string(s[c:])), result.WellFormed(string(s)); got != want {
				t.Fatalf("cut %q at %d (of a buffer of %d): %q, want %q", s, c, end, got, want)
			}
		}
	}
}

// The stream gives the text made well formed whole, whatever the block
// boundaries fall on.
func TestTextStreamIsTheWholeTextMadeWellFormed(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var b bytes.Buffer
	for b.Len() < 5*textBlock {
		b.WriteString(trickyUTF8[rng.Intn(len(trickyUTF8))])
	}
	src := b.Bytes()
	for _, headLen := range []int{0, 1, 8192} {
		ts := newTextStream(bytes.NewReader(src[headLen:]), src[:headLen])
		var got strings.Builder
		for {
			piece, err := ts.next()
			if err == io.EOF {
				break
			}
			if err != nil || piece == "" {
				t.Fatalf("piece %q, err %v", piece, err)
			}
			got.WriteString(piece)
		}
		if want := result.WellFormed(string(src)); got.String() != want {
			t.Fatalf("head %d: the stream gives %d bytes, the whole text made well formed %d", headLen, got.Len(), len(want))
		}
	}
}
