package result

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"
)

// Text is measured in characters and lines (contract §0). These are the
// measures the conversion uses for caps and notices, exported so that the
// tools that page their output (workspace--read, --grep) count the same way.

// Chars is the length of s in characters (contract §0). s must be well formed,
// as every text out of the conversion is: then its characters are its bytes
// that are not continuation bytes (10xxxxxx), which are counted eight at a
// time.
func Chars(s string) int {
	const hi = 0x8080808080808080
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	cont := 0
	i := 0
	for ; i+32 <= len(b); i += 32 {
		w := b[i : i+32 : i+32]
		v0 := binary.LittleEndian.Uint64(w[0:])
		v1 := binary.LittleEndian.Uint64(w[8:])
		v2 := binary.LittleEndian.Uint64(w[16:])
		v3 := binary.LittleEndian.Uint64(w[24:])
		if (v0|v1|v2|v3)&hi == 0 {
			continue
		}
		cont += bits.OnesCount64(v0&^(v0<<1)&hi) + bits.OnesCount64(v1&^(v1<<1)&hi) +
			bits.OnesCount64(v2&^(v2<<1)&hi) + bits.OnesCount64(v3&^(v3<<1)&hi)
	}
	for ; i < len(b); i++ {
		if b[i]&0xC0 == 0x80 {
			cont++
		}
	}
	return len(b) - cont
}

// Lines counts lines as an editor does: a last line without a line end
// counts, an empty text has none.
func Lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// CharOffset is the byte offset of character n of s, or len(s) when s is
// shorter: where a cut after n characters falls, never inside a character.
func CharOffset(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
