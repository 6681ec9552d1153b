package result

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// TextFile is a tool's output that lives in a file instead of in memory: a
// command's stdout and stderr, say, which may be hundreds of megabytes. It
// is a shape of [Result.Data] whose text is what the file holds, read as a
// string is (contract §2, §3): made well formed, saved as a binary payload when
// it is not text, spilled when it is over its cap. The conversion reads it
// once, as a stream, and keeps only the head the cap needs; the spill file
// (or the payload) is the file itself, moved into .myelin/tool-results/, or
// a copy repaired as it is read when the file is not well formed. Memory
// does not grow with the file's size.
//
// The conversion takes the file over: when it is done, the file has been
// moved into the workspace or removed, and File closed. A tool must not
// touch the file once it has returned it, and a consumer that takes a
// Result without converting it (a caller of tool.Dispatcher.Run, or the
// dispatcher when it gave up waiting on the call) hands it to [Discard]. Anything the tool wants after the output (a command's exit
// status) it writes into the file first: the text is the file's bytes and
// nothing else, exactly as if the tool had returned them as a string.
type TextFile struct {
	// Path is the file's path on the OS (not a workspace path).
	Path string
	// File, when not nil, is the file at Path, open for reading. The
	// conversion reads it from its start, whatever its offset, and closes
	// it last, so that a lock the tool holds through it (package shell's,
	// which keeps another process's clean-up away) lasts until the file is
	// moved or removed. nil means the conversion opens Path.
	File *os.File
}

// FileStore is a [Store] that can also take whole files: how a [TextFile]'s
// spill file or payload is kept without passing through memory. The
// workspace implements it. With a Store that does not, a TextFile over its
// cap is read into memory to be saved with Save.
type FileStore interface {
	Store
	// SaveFile moves the file at the OS path src to a new file named name
	// under .myelin/tool-results/, never overwriting (as Save), and returns
	// its workspace-relative path; src is gone once it succeeds. It renames
	// the file when it can and copies it when it must.
	SaveFile(name, src string) (path string, err error)
	// SaveFrom writes what r yields to a new file named name, as Save does
	// with a string. When r fails, the part written is removed and r's
	// error returned as it is (errors.Is finds it).
	SaveFrom(name string, r io.Reader) (path string, err error)
}

// errBinary and errFits end a repaired copy of a TextFile early: the text
// turned out not to be text, or short enough to need no spill file.
var (
	errBinary = errors.New("the output is binary, not text")
	errFits   = errors.New("the output fits its cap")
)

// file converts a TextFile: a short one is read whole and converted as a
// string; a longer one is streamed (textScan), and when its text is over
// the cap it is spilled from the file itself and c.big holds its head. It
// returns the text the result has when it is not spilled.
func (c *converter) file(tf TextFile) (string, error) {
	if tf.Path == "" {
		if tf.File != nil {
			_ = tf.File.Close()
		}
		return "", errors.New("the tool returned a result.TextFile without the path of its file")
	}
	f := tf.File
	if f == nil {
		var err error
		if f, err = os.Open(tf.Path); err != nil {
			return "", fmt.Errorf("reading the tool's output file %s: %w", stubField(tf.Path), err)
		}
	}
	defer f.Close()
	moved := false
	defer func() {
		if !moved {
			_ = os.Remove(tf.Path)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the tool's output file %s: %w", stubField(tf.Path), err)
	}
	c.fileBytes = st.Size()
	if st.Size() <= int64(c.cap) { // a character is at least one byte: it fits, read it whole
		data, err := io.ReadAll(io.NewSectionReader(f, 0, st.Size()))
		if err != nil {
			return "", fmt.Errorf("reading the tool's output file %s: %w", stubField(tf.Path), err)
		}
		return c.str(string(data)), nil
	}

	s := newTextScan(f, c.cap+1) // one character more than the cap: the head never needs more (see spilled.head)
	var pending []byte           // the first chunk that needed repair
	for !s.done && !s.nul && pending == nil {
		text, same, err := s.next()
		if err != nil {
			return "", fmt.Errorf("reading the tool's output file %s: %w", stubField(tf.Path), err)
		}
		if !same {
			pending = text
		}
	}
	name := c.label.String() + ".txt"
	var path string
	var saveErr error
	switch {
	case s.nul:
	case pending == nil: // all of it well formed as it is: the file is the spill
		if s.chars <= c.cap {
			return string(s.head), nil
		}
		path, saveErr = saveFile(c.store, name, tf.Path, f)
		moved = saveErr == nil
	default: // a copy, repaired from the first chunk that needed it on
		r := io.MultiReader(io.NewSectionReader(f, 0, s.cleanEnd), &scanReader{s: s, rest: pending, cap: c.cap})
		path, saveErr = saveFrom(c.store, name, r)
		if s.err != nil {
			return "", fmt.Errorf("reading the tool's output file %s: %w", stubField(tf.Path), s.err)
		}
		for !s.done && !s.nul { // the copy failed before the end: the notice still needs the counts
			if _, _, err := s.next(); err != nil {
				return "", fmt.Errorf("reading the tool's output file %s: %w", stubField(tf.Path), err)
			}
		}
	}
	if s.binary() {
		mime := sniff(string(s.magic))
		size := st.Size()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		stub, err := c.saveWith(func(n string) (string, error) { return saveFile(c.store, n, tf.Path, f) }, "binary", mime, size)
		moved = err == nil
		return stub, nil
	}
	c.out.repaired += s.bad
	if s.chars <= c.cap {
		return string(s.head), nil
	}
	if saveErr != nil {
		path = ""
	}
	sp := &spilled{text: string(s.head), chars: s.chars, lines: s.lines(), path: path, err: saveErr}
	c.big = &piece{text: sp.text, chars: s.chars, cap: c.cap, label: c.label, sp: sp}
	return "", nil
}

// discard disposes of a TextFile the conversion will not read (its result
// became an error before its data was converted): the file is taken over
// all the same.
// Discard removes what a result that will never be converted holds on the
// disk: a [TextFile]'s file. Other results hold nothing and are left alone.
func Discard(r Result) { discard(r.Data) }

func discard(data any) {
	var tf TextFile
	switch d := data.(type) {
	case TextFile:
		tf = d
	case *TextFile:
		if d == nil {
			return
		}
		tf = *d
	default:
		return
	}
	_ = os.Remove(tf.Path)
	if tf.File != nil {
		_ = tf.File.Close()
	}
}

// scanReader is the rest of a textScan as a reader: the well-formed text
// of each chunk in turn. At the end it fails with errBinary when the text
// turned out binary, or errFits when it fits the cap, so that a copy begun
// before that was known is not kept.
type scanReader struct {
	s    *textScan
	rest []byte
	cap  int
}

func (r *scanReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if r.s.nul {
			return 0, errBinary
		}
		if r.s.done {
			switch {
			case r.s.binary():
				return 0, errBinary
			case r.s.chars <= r.cap:
				return 0, errFits
			}
			return 0, io.EOF
		}
		text, _, err := r.s.next()
		if err != nil {
			return 0, err
		}
		r.rest = text
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// saveFile moves the file at src (open as f) into the store under name; a
// Store that cannot take files gets its bytes read into memory, and src is
// removed once they are saved.
func saveFile(store Store, name, src string, f *os.File) (string, error) {
	switch s := store.(type) {
	case nil:
		return "", ErrNoWorkspace
	case FileStore:
		return s.SaveFile(name, src)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, math.MaxInt64))
	if err != nil {
		return "", err
	}
	p, err := store.Save(name, string(data))
	if err == nil {
		_ = os.Remove(src) // as a move would have
	}
	return p, err
}

// saveFrom writes what r yields into the store under name; a Store that
// cannot take a stream gets it read into memory.
func saveFrom(store Store, name string, r io.Reader) (string, error) {
	switch s := store.(type) {
	case nil:
		return "", ErrNoWorkspace
	case FileStore:
		return s.SaveFrom(name, r)
	}
	var b strings.Builder
	if _, err := io.Copy(&b, r); err != nil {
		return "", err
	}
	return store.Save(name, b.String())
}
