package result

import (
	"bytes"
	"io"
	"unicode/utf8"
	"unsafe"
)

// scanChunk is how much of a TextFile is read at a time. It is a variable
// only so that tests can make chunk boundaries fall everywhere.
var scanChunk = 256 << 10

// textScan reads a TextFile's bytes once, a chunk at a time, and keeps only
// what the conversion needs of them: the head of the text (its first keep
// characters, well formed), how many characters and lines the text has, how
// many ill-formed sequences it held and whether it holds a NUL (the binary
// test), its first bytes (to sniff a payload's type), and how far it was
// well formed as it is. Each chunk is made well formed on its own: a chunk
// ends before a sequence or a surrogate pair its end would cut (safeEnd),
// and those bytes go before the next one.
type textScan struct {
	src  io.ReaderAt
	off  int64  // bytes of src read so far
	buf  []byte // carried bytes, then the chunk read
	from int    // buf[from:to] are the bytes carried to the next chunk
	to   int
	out  []byte // a chunk's repaired text
	done bool   // src is read to its end
	err  error  // why reading src failed

	keep      int    // characters of head to keep
	head      []byte // the text's first keep characters
	headChars int
	chars     int  // characters of the text
	newlines  int  // its line ends
	last      byte // its last byte
	bad       int  // ill-formed sequences (repairTo)
	nul       bool // a NUL byte was read: it is binary, and the scan stops there
	magic     []byte
	cleanEnd  int64 // the bytes of src before its first chunk that needed repair
	repaired  bool
}

func newTextScan(src io.ReaderAt, keep int) *textScan {
	return &textScan{src: src, keep: keep, buf: make([]byte, scanChunk+8)}
}

// next reads and scans the next chunk and returns its text, well formed,
// and whether that is the chunk's bytes as they were. It returns no text
// and sets nul when the chunk holds a NUL, and done once src is read to its
// end. The text is valid until the next call.
func (s *textScan) next() (text []byte, same bool, err error) {
	if s.done || s.nul {
		return nil, false, io.EOF
	}
	carried := copy(s.buf, s.buf[s.from:s.to])
	n, err := s.src.ReadAt(s.buf[carried:], s.off)
	s.off += int64(n)
	if err != nil && err != io.EOF {
		s.err = err
		return nil, false, err
	}
	final := err == io.EOF || n == 0
	data := s.buf[:carried+n]
	if len(s.magic) == 0 {
		s.magic = append([]byte(nil), data[:min(len(data), 16)]...)
	}
	end := len(data)
	if !final {
		end = safeEnd(data)
	}
	s.from, s.to = end, len(data)
	s.done = final
	piece := data[:end]
	if plain, chars := plainText(unsafe.String(unsafe.SliceData(piece), len(piece)), true); plain {
		if !s.repaired {
			s.cleanEnd = s.off - int64(len(data)-end)
		}
		s.count(piece, chars)
		return piece, true, nil
	}
	if bytes.IndexByte(piece, 0) >= 0 {
		s.nul = true
		return nil, false, nil
	}
	var bad int
	s.out, bad = repairTo(s.out[:0], piece)
	s.bad += bad
	s.repaired = true
	s.count(s.out, Chars(unsafe.String(unsafe.SliceData(s.out), len(s.out))))
	return s.out, false, nil
}

// count adds a chunk's well-formed text, of chars characters, to the
// counts and the head.
func (s *textScan) count(text []byte, chars int) {
	if len(text) == 0 {
		return
	}
	str := unsafe.String(unsafe.SliceData(text), len(text))
	s.chars += chars
	s.newlines += bytes.Count(text, []byte{'\n'})
	s.last = text[len(text)-1]
	if s.headChars < s.keep {
		cut := CharOffset(str, s.keep-s.headChars)
		s.head = append(s.head, text[:cut]...)
		s.headChars += Chars(str[:cut])
	}
}

// lines is how many lines the text has, as [Lines] counts them.
func (s *textScan) lines() int {
	if s.chars > 0 && s.last != '\n' {
		return s.newlines + 1
	}
	return s.newlines
}

// binary reports whether what was read is not text (contract §2): a NUL, or
// ill-formed sequences over 30% of the characters (isBinary).
func (s *textScan) binary() bool { return s.nul || isBinary(s.chars, s.bad) }

// TextStream reads text a chunk at a time, each chunk made well formed so
// that the chunks together are exactly what [WellFormed] makes of the
// whole (a chunk never ends inside a sequence or before the low half of a
// surrogate pair): one ill-formed sequence is one U+FFFD, one character,
// wherever the chunks fall. It is how a program that pages or counts a file
// (workspace--read) sees the same characters as the conversion does, in
// memory bounded by the chunk, whatever the file holds.
//
// It must not be used to convert a tool's result: that is [Round]'s job
// (a [TextFile] is streamed there).
type TextStream struct {
	r        io.Reader
	buf      []byte
	from, to int // buf[from:to] are bytes carried to the next chunk
	out      []byte
	eof      bool
}

// NewTextStream reads r, about 256 KiB at a time.
func NewTextStream(r io.Reader) *TextStream {
	return &TextStream{r: r, buf: make([]byte, scanChunk+8)}
}

// Next returns the next chunk of the text, well formed and never empty, or
// "" and an error: io.EOF at the end. The string is valid until the next
// call: it may be the stream's own buffer.
func (t *TextStream) Next() (string, error) {
	for {
		n := copy(t.buf, t.buf[t.from:t.to])
		for !t.eof && n < len(t.buf) {
			m, err := t.r.Read(t.buf[n:])
			n += m
			if err == io.EOF {
				t.eof = true
			} else if err != nil {
				return "", err
			} else if m == 0 {
				break
			}
		}
		data := t.buf[:n]
		end := n
		if !t.eof {
			end = safeEnd(data)
		}
		t.from, t.to = end, n
		if end == 0 {
			if t.eof {
				return "", io.EOF
			}
			continue // only bytes to carry so far: read on
		}
		piece := data[:end]
		if utf8.Valid(piece) {
			return unsafe.String(unsafe.SliceData(piece), len(piece)), nil
		}
		t.out, _ = repairTo(t.out[:0], piece)
		return unsafe.String(unsafe.SliceData(t.out), len(t.out)), nil
	}
}
