package result

import (
	"bytes"
	"io"
	"math/rand"
	"strings"
	"testing"
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

// oneByteReader hands out its bytes one at a time, so that every chunk
// boundary a reader can make is tried.
type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}

func readAll(t *testing.T, ts *TextStream) string {
	t.Helper()
	var got strings.Builder
	for {
		piece, err := ts.Next()
		if err == io.EOF {
			return got.String()
		}
		if err != nil || piece == "" {
			t.Fatalf("piece %q, err %v", piece, err)
		}
		got.WriteString(piece)
	}
}

// The stream gives the text made well formed whole, wherever its chunks
// and its reader's reads end.
func TestTextStreamIsTheWholeTextMadeWellFormed(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var b bytes.Buffer
	for b.Len() < 3*scanChunk {
		b.WriteString(trickyUTF8[rng.Intn(len(trickyUTF8))])
	}
	src := b.Bytes()
	if got, want := readAll(t, NewTextStream(bytes.NewReader(src))), WellFormed(string(src)); got != want {
		t.Fatalf("the stream gives %d bytes, the whole text made well formed %d", len(got), len(want))
	}
	for chunk := 1; chunk <= 13; chunk++ {
		withChunk(t, chunk)
		for i := range 100 {
			var small bytes.Buffer
			for small.Len() < 40 {
				small.WriteString(trickyUTF8[rng.Intn(len(trickyUTF8))])
			}
			if got, want := readAll(t, NewTextStream(&oneByteReader{small.Bytes()})), WellFormed(small.String()); got != want {
				t.Fatalf("chunks of %d, case %d, %q: %q, want %q", chunk, i, small.Bytes(), got, want)
			}
		}
	}
}
