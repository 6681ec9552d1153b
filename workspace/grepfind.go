package workspace

import (
	"bytes"
	"strings"
)

// literalFinder finds a literal in text by its rarest byte: bytes.IndexByte
// (SIMD fast, and fastest when the byte is rare) finds that byte, and the
// literal is checked around it. bytes.Index, which looks for the
// literal's first byte, slows to a crawl when that byte is common (a space,
// a lowercase letter). When the rare byte is not rare in the text after
// all, it goes over to bytes.Index for the rest of the search. With fold,
// the literal is lowered and ASCII letters of the text match either case;
// the byte looked for is then one that is no letter. It must not be used
// for a folded literal that has no such byte (newLiteralFinder says so).
type literalFinder struct {
	lit  []byte
	fold bool
	at   int  // the offset in lit of the byte looked for
	rare byte // lit[at]
}

// newLiteralFinder is the finder of lit, or nil when fold is set and every
// byte of lit is a letter.
func newLiteralFinder(lit []byte, fold bool) *literalFinder {
	at := -1
	for i, c := range lit {
		if fold && isASCIILetter(c) {
			continue
		}
		if at < 0 || byteRank(c) < byteRank(lit[at]) {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	return &literalFinder{lit: lit, fold: fold, at: at, rare: lit[at]}
}

// index is the offset of the first place in text that holds the literal,
// or -1.
func (f *literalFinder) index(text []byte) int {
	n := len(f.lit)
	fails := 0
	for i := f.at; i+n-f.at <= len(text); i++ {
		j := bytes.IndexByte(text[i:len(text)-(n-f.at)+1], f.rare)
		if j < 0 {
			return -1
		}
		i += j
		if f.equal(text[i-f.at : i-f.at+n]) {
			return i - f.at
		}
		// Too many false hits for what was searched: the byte is not rare
		// here; bytes.Index looks for the whole literal at a steady pace.
		if fails++; !f.fold && fails > 16+(i>>4) {
			if k := bytes.Index(text[i-f.at+1:], f.lit); k >= 0 {
				return i - f.at + 1 + k
			}
			return -1
		}
	}
	return -1
}

// equal reports whether b (as long as the literal) is the literal.
func (f *literalFinder) equal(b []byte) bool {
	if !f.fold {
		return bytes.Equal(b, f.lit)
	}
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != f.lit[i] {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// byteRank guesses how common a byte is in the text grep meets (code,
// logs, prose): higher is more common. It only orders the bytes of a
// literal, to pick the one to look for.
func byteRank(c byte) int {
	const lower = "etaoinsrhldcumfpgwybvkxjqz" // English letter frequency, most common first
	switch {
	case c == ' ':
		return 255
	case c >= '0' && c <= '9':
		return 230
	case c >= 'a' && c <= 'z':
		return 229 - 3*strings.IndexByte(lower, c)
	case strings.IndexByte("\t.,-_:/=\"'()\n;{}", c) >= 0:
		return 180 // as common as a lowercase letter of the middle
	case c >= 'A' && c <= 'Z':
		return 130 - 2*strings.IndexByte(lower, c+'a'-'A')
	case c < 0x20 || c == 0x7f:
		return 30
	case c >= 0x80:
		return 60
	}
	return 100 // other punctuation
}
