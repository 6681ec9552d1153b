package workspace

import (
	"io"
	"unsafe"

	"github.com/myelin-run/myelin/result"
)

// textStream reads a file as well-formed text (SPEC §3), a block at a
// time, in a fixed amount of memory: each block is made well formed with
// result.WellFormed, and blocks are cut only where that gives the same text
// as repairing the whole file at once (never inside a character, an
// ill-formed sequence or a surrogate pair written in UTF-8 form). So an
// ill-formed sequence is one U+FFFD, one character, in the counts and on
// the page alike.
//
// It is workspace's own minimal reader: package result had no streaming
// one when workspace--read needed it. It must not be used for anything but
// reading a file's text in order.
type textStream struct {
	r    io.Reader
	buf  []byte
	n    int // bytes in buf
	used int // buf[:used] was handed out; it goes at the next call
	eof  bool
	err  error
}

// textBlock is how much a textStream reads at a time.
const textBlock = 256 << 10

// newTextStream reads r, starting with the bytes of head (already read
// from it).
func newTextStream(r io.Reader, head []byte) *textStream {
	t := &textStream{r: r, buf: make([]byte, max(textBlock, len(head)+16))}
	t.n = copy(t.buf, head)
	return t
}

// next returns the next piece of the text (never empty), or "" and the
// error: io.EOF at the end. A piece that was valid as read is the buffer
// itself, not a copy: it is valid until the next call.
func (t *textStream) next() (string, error) {
	t.n = copy(t.buf, t.buf[t.used:t.n])
	t.used = 0
	for !t.eof && t.n < len(t.buf) {
		m, err := t.r.Read(t.buf[t.n:])
		t.n += m
		if err == io.EOF {
			t.eof = true
		} else if err != nil {
			return "", err
		} else if m == 0 {
			break
		}
	}
	if t.n == 0 {
		return "", io.EOF
	}
	cut := t.n
	if !t.eof {
		cut = safeCut(t.buf[:t.n])
	}
	t.used = cut
	return result.WellFormed(unsafe.String(&t.buf[0], cut)), nil
}

// safeCut is the last offset in b, near its end, where b may be cut into
// two blocks that are made well formed one after the other with the same
// result as b whole: before a byte that no character or ill-formed sequence
// before it can take in (not a continuation byte, and not the start of a
// low surrogate after a high one), or after three continuation bytes in a
// row (no sequence is longer). With no such offset in the last 12 bytes,
// which well-formed or ill-formed UTF-8 cannot produce, it is len(b).
func safeCut(b []byte) int {
	cont := func(i int) bool { return b[i]&0xC0 == 0x80 }
	for c := len(b) - 1; c > 0 && c >= len(b)-12; c-- {
		if !cont(c) {
			if b[c] == 0xED && c >= 3 && b[c-3] == 0xED && b[c-2] >= 0xA0 && b[c-2] <= 0xAF && cont(c-1) &&
				(c+1 >= len(b) || b[c+1] >= 0xB0 && b[c+1] <= 0xBF) {
				continue // it may be the low half of a surrogate pair
			}
			return c
		}
		if c >= 3 && cont(c-1) && cont(c-2) && cont(c-3) {
			return c
		}
	}
	return len(b)
}
