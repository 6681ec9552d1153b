package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/myelin-run/myelin/internal/leftover"
	"github.com/myelin-run/myelin/result"
)

// A reply is read into memory and decoded whole only when it is small. A
// larger one (over spoolAt) goes to a file as it is read, and when it is
// the reply to a tools/call whose blocks are all text, its text is decoded
// from that file into another one, which the call returns as a
// result.TextFile: the conversion spills it from there, as it does a
// command's output (package shell). Memory then stays a few times spoolAt
// whatever the reply's size, where reading it whole took 6.5–9.7 times the
// reply (the line, the SDK's copy of its result, the decoded blocks, their
// joined and spilled text). Any other large message — a result with an
// image, a request from the server — is read back into memory and decoded
// as before.

// spoolAt is the size over which a message goes to a file as it is read.
const spoolAt = 1 << 20

// smallText is the most text a spooled result decodes into memory as
// blocks, as FromMCP would: over it, the text is a TextFile.
const smallText = 1 << 20

// textFiles is the kind of the file a large reply's text is decoded into:
// $TMPDIR/myelin-mcp-text-<pid>-<random>.txt, locked (flock) through the
// file from its creation until the conversion has moved or removed it and
// closed it last (result.TextFile). One a killed myelin left is removed
// by a later sweep, at the next such file's creation, once nobody holds
// its lock (package internal/leftover).
var textFiles = &leftover.Kind{Prefix: "myelin-mcp-text-", Suffix: ".txt"}

// spool holds a message as it is read: in memory up to spoolAt, then in a
// file of its own, already removed from its directory (nothing is left
// behind however myelin ends).
type spool struct {
	mem  []byte
	file *os.File
	w    *bufio.Writer
	size int64
	// rest, when set, scans the message for its id as it is read
	// (readLineTo): how one that is not kept is answered.
	rest *idScan
	// werr is why the message could not be kept, when writing its file
	// failed.
	werr error
}

func (s *spool) Write(p []byte) (int, error) {
	s.size += int64(len(p))
	if s.file == nil && int64(len(s.mem))+int64(len(p)) <= spoolAt {
		s.mem = append(s.mem, p...)
		return len(p), nil
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "myelin-mcp-reply-*")
		if err != nil {
			return 0, fmt.Errorf("spooling a large reply to a file: %w", err)
		}
		os.Remove(f.Name())
		s.file, s.w = f, bufio.NewWriterSize(f, 64<<10)
		if _, err := s.w.Write(s.mem); err != nil {
			return 0, fmt.Errorf("spooling a large reply to a file: %w", err)
		}
		s.mem = nil
	}
	if _, err := s.w.Write(p); err != nil {
		return 0, fmt.Errorf("spooling a large reply to a file: %w", err)
	}
	return len(p), nil
}

// spooled reports whether the message went to a file.
func (s *spool) spooled() bool { return s.file != nil }

// reader gives the spooled message from its start.
func (s *spool) reader() (io.ReaderAt, error) {
	if err := s.w.Flush(); err != nil {
		return nil, fmt.Errorf("spooling a large reply to a file: %w", err)
	}
	return s.file, nil
}

// bytes reads the whole message into memory: how a large message that is
// not a text result is decoded, as it was before it went to a file.
func (s *spool) bytes() ([]byte, error) {
	if s.file == nil {
		return s.mem, nil
	}
	r, err := s.reader()
	if err != nil {
		return nil, err
	}
	data := make([]byte, s.size)
	if _, err := r.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading back a large reply: %w", err)
	}
	return data, nil
}

// close drops the file, if there is one.
func (s *spool) close() {
	if s.file != nil {
		s.file.Close()
		s.file, s.w = nil, nil
	}
	s.mem = nil
}

// errNotText says a spooled message is not one takeSpooled decodes from
// the file: it is decoded in memory instead.
var errNotText = errors.New("not a tools/call reply of text blocks")

// takeSpooled decodes the spooled message in src (size bytes) when it is
// the reply to a tools/call that waits for it (waiting gives its slot by
// id) and its result's blocks are all text, puts the result in the slot,
// and returns the reply the SDK gets in its place (an empty result, as
// take leaves it). Otherwise it returns errNotText (or what went wrong
// reading), and no slot is touched.
func takeSpooled(src io.ReaderAt, size int64, waiting func(jsonrpc.ID) *slot) (*jsonrpc.Response, error) {
	p := &jsonReader{r: bufio.NewReaderSize(io.NewSectionReader(src, 0, size), 64<<10)}
	var id jsonrpc.ID
	var res *spooledResult
	var version string
	seen := map[string]bool{}
	defer func() {
		if res != nil && res.text != nil { // not handed on
			os.Remove(res.text.Name())
			res.text.Close()
		}
	}()
	err := p.object(func(key string) error {
		if seen[strings.ToLower(key)] {
			return errNotText // a key twice: decoded in memory, as the SDK would
		}
		seen[strings.ToLower(key)] = true
		switch key {
		case "jsonrpc":
			raw, err := p.raw(128)
			if err == nil {
				err = json.Unmarshal(raw, &version)
			}
			return err
		case "id":
			raw, err := p.raw(maxScanned)
			if err != nil {
				return err
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			if id, err = jsonrpc.MakeID(v); err != nil {
				return err
			}
			return nil
		case "result":
			var err error
			res, err = readResult(p)
			return err
		}
		switch strings.ToLower(key) {
		case "method", "error", "params", "jsonrpc", "id", "result":
			return errNotText // a request, an error, or a key in another case
		}
		return p.skip()
	})
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return nil, err
	}
	if version != "2.0" || res == nil || !id.IsValid() {
		return nil, errNotText
	}
	sl := waiting(id)
	if sl == nil {
		return nil, errNotText
	}
	r, err := res.result(src)
	if err != nil {
		return nil, err
	}
	res.text = nil // the result holds it now
	sl.setResult(r)
	return &jsonrpc.Response{ID: id, Result: emptyResult}, nil
}

// spooledResult is a tools/call result read from a spooled reply: its text
// blocks' text decoded into a file, a "\n" between blocks, as the
// conversion joins them.
type spooledResult struct {
	start, end int64 // where the result's JSON is in the reply
	text       *os.File
	textW      *bufio.Writer
	textSize   int64
	blocks     int
	// plain is set while every block's text is valid UTF-8 without a NUL
	// byte: only then is the joined text what the blocks converted one by
	// one would give (each one is itself), so that several blocks can be
	// one file.
	plain      bool
	isError    bool
	structured json.RawMessage
}

// readResult reads the result object at p. Only "content" of text blocks,
// "structuredContent", "isError" and a final "resultType" are taken;
// anything else about it is errNotText.
func readResult(p *jsonReader) (*spooledResult, error) {
	r := &spooledResult{plain: true}
	p.space()
	r.start = p.off
	seen := map[string]bool{}
	err := p.object(func(key string) error {
		low := strings.ToLower(key)
		if seen[low] {
			return errNotText
		}
		seen[low] = true
		switch low {
		case "content":
			if key != "content" {
				return errNotText
			}
			return r.content(p)
		case "structuredcontent":
			raw, err := p.raw(-1)
			if len(raw) > 0 {
				r.structured = raw
			}
			return err
		case "iserror":
			raw, err := p.raw(16)
			if err == nil && string(raw) != "null" {
				err = json.Unmarshal(raw, &r.isError)
			}
			return err
		case "resulttype":
			raw, err := p.raw(256)
			var t *string
			if err == nil {
				err = json.Unmarshal(raw, &t)
			}
			if err == nil && t != nil && *t != "complete" {
				err = errNotText // not final: the SDK sends the call again
			}
			return err
		}
		return p.skip()
	})
	r.end = p.off
	if err == nil && r.textW != nil {
		err = r.textW.Flush()
	}
	if err != nil && r.text != nil {
		os.Remove(r.text.Name())
		r.text.Close()
		r.text = nil
	}
	return r, err
}

// content reads the content array, each block's text into the text file.
func (r *spooledResult) content(p *jsonReader) error {
	if p.peek() == 'n' {
		return p.literal("null")
	}
	return p.array(func() error {
		if r.blocks > 0 {
			if err := r.write([]byte("\n")); err != nil {
				return err
			}
		}
		r.blocks++
		var typ json.RawMessage
		blockKeys := map[string]bool{}
		err := p.object(func(key string) error {
			if blockKeys[key] {
				return errNotText
			}
			blockKeys[key] = true
			switch key {
			case "text":
				if p.peek() != '"' {
					return errNotText
				}
				v := &plainCheck{}
				err := p.str(func(b []byte) error {
					v.write(b)
					return r.write(b)
				})
				if !v.plain() {
					r.plain = false
				}
				return err
			case "type":
				var err error
				typ, err = p.raw(64)
				return err
			}
			return p.skip()
		})
		if errors.Is(err, errNotObject) {
			return errNotText // an unknown block: its JSON is its text
		}
		if err != nil {
			return err
		}
		if string(typ) != `"text"` {
			return errNotText // the block's "text" was not the text of a text block
		}
		return nil // a text block without "text" is an empty one
	})
}

func (r *spooledResult) write(b []byte) error {
	if r.text == nil {
		f, err := textFiles.Create()
		if err != nil {
			return fmt.Errorf("writing a large reply's text to a file: %w", err)
		}
		r.text, r.textW = f, bufio.NewWriterSize(f, 64<<10)
	}
	r.textSize += int64(len(b))
	if _, err := r.textW.Write(b); err != nil {
		return fmt.Errorf("writing a large reply's text to %s: %w", r.text.Name(), err)
	}
	return nil
}

// result is the tool result, its text a TextFile; errNotText when the
// text is small (the reply is large for another reason: decoded in
// memory, as before) or when several blocks are not all plain text.
func (r *spooledResult) result(src io.ReaderAt) (result.Result, error) {
	if r.textSize <= smallText || r.blocks > 1 && !r.plain {
		return result.Result{}, errNotText
	}
	head := make([]byte, min(r.end-r.start, result.ReplyKept))
	if _, err := src.ReadAt(head, r.start); err != nil && !errors.Is(err, io.EOF) {
		return result.Result{}, fmt.Errorf("reading back a large reply: %w", err)
	}
	if _, err := r.text.Seek(0, io.SeekStart); err != nil {
		return result.Result{}, fmt.Errorf("reading back a large reply's text: %w", err)
	}
	out := result.Result{
		Data:      result.TextFile{Path: r.text.Name(), File: r.text},
		IsError:   r.isError,
		Reply:     head,
		ReplySize: int(r.end - r.start),
	}
	if r.structured != nil {
		out.Structured = r.structured
	}
	return out, nil
}

// plainCheck follows a text given in pieces and says whether it is valid
// UTF-8 without a NUL byte (package result's plain text, which the
// conversion keeps as it is).
type plainCheck struct {
	carry []byte // the start of a character the last piece cut
	bad   bool
}

func (v *plainCheck) write(b []byte) {
	if v.bad {
		return
	}
	if len(v.carry) > 0 {
		b = append(v.carry, b...)
		v.carry = nil
	}
	if bytes.IndexByte(b, 0) >= 0 {
		v.bad = true
		return
	}
	end := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		if b[i]&0xC0 != 0x80 { // the start of the last character
			if !utf8.FullRune(b[i:]) {
				end = i
			}
			break
		}
	}
	if !utf8.Valid(b[:end]) {
		v.bad = true
		return
	}
	v.carry = append([]byte(nil), b[end:]...)
}

// plain reports whether the whole text was plain.
func (v *plainCheck) plain() bool { return !v.bad && len(v.carry) == 0 }
