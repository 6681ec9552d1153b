package result

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/myelin-run/myelin/internal/jsonstring"
)

// Text is well formed when it is valid UTF-8 (contract §3). WellFormed makes it so:
//
//   - each ill-formed byte sequence (a maximal subpart, as Unicode and the
//     WHATWG decoder define it) becomes one U+FFFD;
//   - a UTF-16 surrogate written in UTF-8 form (CESU-8, WTF-8): a high one
//     followed by a low one is the character the pair encodes; a lone one is
//     one U+FFFD.
//
// A string that is already valid is returned as is, not copied.
func WellFormed(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out, _ := repair(s)
	return out
}

// isPlainText reports whether s is valid UTF-8 without a NUL byte: the case
// where the conversion returns s itself. It reads s once. Runs of ASCII are
// checked 64 bytes at a time for both a high bit and a zero byte in one
// test (the lowest zero byte of a word always sets its high bit when one is
// subtracted from every byte, and no other byte below 0x80 does); a block holding other characters is handed to utf8.ValidString,
// and searched for NUL while it is still in cache.
func isPlainText(s string) bool {
	plain, _ := plainText(s, false)
	return plain
}

// plainText is isPlainText, and with count set also the number of
// characters of s when it is plain: its bytes less the continuation bytes
// of the blocks that are not ASCII (runs of ASCII have as many characters
// as bytes, and are not read twice). It is how a streamed file is checked
// and counted in one pass.
func plainText(s string, count bool) (bool, int) {
	const hi = 0x8080808080808080
	const lo = 0x0101010101010101
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i, n := 0, len(b)
	cont := 0 // continuation bytes, when counting
	for i < n {
		for i+64 <= n {
			w := b[i : i+64 : i+64]
			v0 := binary.LittleEndian.Uint64(w[0:])
			v1 := binary.LittleEndian.Uint64(w[8:])
			v2 := binary.LittleEndian.Uint64(w[16:])
			v3 := binary.LittleEndian.Uint64(w[24:])
			v4 := binary.LittleEndian.Uint64(w[32:])
			v5 := binary.LittleEndian.Uint64(w[40:])
			v6 := binary.LittleEndian.Uint64(w[48:])
			v7 := binary.LittleEndian.Uint64(w[56:])
			or := v0 | v1 | v2 | v3 | v4 | v5 | v6 | v7
			if (or|(v0-lo)|(v1-lo)|(v2-lo)|(v3-lo)|(v4-lo)|(v5-lo)|(v6-lo)|(v7-lo))&hi != 0 {
				if or&hi != 0 {
					break
				}
				return false, 0 // a zero byte
			}
			i += 64
		}
		if i+64 > n {
			tail := s[i:]
			if !utf8.ValidString(tail) || strings.IndexByte(tail, 0) >= 0 {
				return false, 0
			}
			if count {
				cont += len(tail) - Chars(tail)
			}
			return true, n - cont
		}
		// A block with a non-ASCII byte in its first 64: up to 4 KiB, ended
		// at a character boundary so that ValidString sees whole sequences.
		end := min(i+4096, n)
		for back := 0; end < n && back < 3 && b[end]&0xC0 == 0x80; back++ {
			end--
		}
		block := s[i:end]
		if !utf8.ValidString(block) || strings.IndexByte(block, 0) >= 0 {
			return false, 0
		}
		if count {
			cont += len(block) - Chars(block)
		}
		i = end
	}
	return true, n - cont
}

// repair returns s with every ill-formed sequence replaced (see WellFormed)
// and how many ill-formed sequences it had (see repairTo).
func repair(s string) (string, int) {
	out, bad := repairTo(make([]byte, 0, len(s)+len(s)/8), unsafe.Slice(unsafe.StringData(s), len(s)))
	return unsafe.String(unsafe.SliceData(out), len(out)), bad
}

// repairTo appends s, made well formed (see WellFormed), to dst and returns
// it with the number of ill-formed sequences s held: each one counts once,
// however many bytes it has, and a surrogate written in UTF-8 form, paired or
// lone, counts as none (it is text a UTF-16 producer wrote, contract §3). That
// count is what the binary test weighs (isBinary).
//
// s is taken as the end of its text: a sequence or a surrogate pair cut off
// at its end is ill formed. A stream repairs each chunk up to [safeEnd] and
// carries the rest over, so that its chunks give what the whole would.
func repairTo(dst []byte, s []byte) ([]byte, int) {
	bad := 0
	start := 0 // s[start:i] is well formed and not yet written
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r != utf8.RuneError || size > 1 {
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		if hi, ok := surrogateAt(s, i); ok {
			if hi >= 0xD800 && hi < 0xDC00 {
				if lo, ok := surrogateAt(s, i+3); ok && lo >= 0xDC00 {
					dst = utf8.AppendRune(dst, 0x10000+(hi-0xD800)<<10+(lo-0xDC00))
					i += 6
					start = i
					continue
				}
			}
			dst = utf8.AppendRune(dst, utf8.RuneError) // a lone one: text, not a bad sequence
			i += 3
			start = i
			continue
		}
		n := maximalSubpart(s[i:])
		dst = utf8.AppendRune(dst, utf8.RuneError)
		i += n
		start = i
		bad++
	}
	return append(dst, s[start:]...), bad
}

// safeEnd is how much of b, a chunk of a longer text, can be repaired
// without the bytes that follow it: all of it but a sequence its end cuts
// off (a lead byte and fewer continuation bytes than it announces) and a high
// surrogate in UTF-8 form, which the next bytes may pair. What it leaves is
// at most 5 bytes, to go before the next chunk.
func safeEnd(b []byte) int {
	n := len(b)
	for k := 1; k <= 3 && k <= n; k++ {
		c := b[n-k]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back for its lead
		}
		if c >= 0xC0 && leadLen(c) > k {
			n -= k
		}
		break
	}
	if n >= 3 && b[n-3] == 0xED && b[n-2] >= 0xA0 && b[n-2] <= 0xAF && b[n-1]&0xC0 == 0x80 {
		n -= 3
	}
	return n
}

// leadLen is the length of the sequence that lead byte c announces.
func leadLen(c byte) int {
	switch {
	case c >= 0xF0:
		return 4
	case c >= 0xE0:
		return 3
	}
	return 2
}

// surrogateAt decodes a surrogate code point written in UTF-8 form
// (ED A0..BF 80..BF) at s[i:], if there is one.
func surrogateAt(s []byte, i int) (rune, bool) {
	if i+3 > len(s) || s[i] != 0xED || s[i+1] < 0xA0 || s[i+1] > 0xBF || s[i+2]&0xC0 != 0x80 {
		return 0, false
	}
	return 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), true
}

// maximalSubpart returns the length of the ill-formed sequence at the start
// of s: the longest prefix that begins a well-formed sequence but does not
// complete one, or 1 for a byte that begins none (Unicode §3.9, Table 3-7).
func maximalSubpart(s []byte) int {
	c := s[0]
	lo, hi := byte(0x80), byte(0xBF) // the range of the second byte
	need := 0                        // continuation bytes after the lead
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(s); k++ {
		b := s[n]
		if k == 0 && (b < lo || b > hi) || k > 0 && b&0xC0 != 0x80 {
			break
		}
		n++
	}
	return n
}

// LooksBinary reports whether s is not text but binary data: it holds a NUL
// byte, or its ill-formed sequences are more than 30% of its characters once
// made well formed (see isBinary; contract §2). Such a string is saved as a
// file, never shown as a page of U+FFFD. Callers that sniff a file pass its
// first few kilobytes.
func LooksBinary(s string) bool {
	if isPlainText(s) {
		return false
	}
	if strings.IndexByte(s, 0) >= 0 {
		return true
	}
	fixed, bad := repair(s)
	return isBinary(Chars(fixed), bad)
}

// wellFormedJSON makes the strings of valid JSON well formed: ill-formed
// bytes and surrogates in UTF-8 form as WellFormed does, and a `\uXXXX`
// escape of a lone surrogate as `\ufffd`, so that the JSON's own text is
// valid UTF-8 and so is every string a reader decodes from it. JSON that
// needs nothing is returned as is.
func wellFormedJSON(b []byte) []byte {
	if utf8.Valid(b) && !hasSurrogateEscape(b) {
		return b
	}
	s := WellFormed(string(b))
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			out = append(out, s[i])
			continue
		}
		if s[i+1] != 'u' {
			out = append(out, s[i], s[i+1]) // an escape of one character, \\ included
			i++
			continue
		}
		r, n, _ := jsonstring.UnicodeEscape(s[i+2:]) // not hex: n is 0, the \u kept as written
		switch {
		case n == 10: // a pair: kept as it was written
			out = append(out, s[i:i+12]...)
		case r == utf8.RuneError && n == 4 && isSurrogateHex(s[i+2:i+6]):
			out = append(out, `\ufffd`...)
		default:
			out = append(out, s[i:i+2+n]...)
		}
		i += 1 + n
	}
	return out
}

// hasSurrogateEscape reports whether b may hold `\uD800`–`\uDFFF`.
func hasSurrogateEscape(b []byte) bool {
	for i := 0; i+5 < len(b); i++ {
		if b[i] == '\\' && b[i+1] == 'u' && (b[i+2] == 'd' || b[i+2] == 'D') {
			switch b[i+3] {
			case '8', '9', 'a', 'b', 'c', 'd', 'e', 'f', 'A', 'B', 'C', 'D', 'E', 'F':
				return true
			}
		}
	}
	return false
}

func isSurrogateHex(h string) bool {
	r, ok := jsonstring.Hex4(h)
	return ok && r >= 0xD800 && r < 0xE000
}
