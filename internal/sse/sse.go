// Package sse reads a server-sent event stream — the text/event-stream
// answer every streaming wire gets — one event at a time.
//
// It exists because the SDKs' own stream readers decode each event into a
// generic tree before the wire reads three fields of it; a wire that reads
// events here decodes only what it needs. It knows nothing of any wire: it
// neither decodes an event's data nor recognises an error event, and it
// must not allocate per event beyond growing its buffers to the largest
// event seen.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Event is one dispatched event.
type Event struct {
	// Name is the event's `event:` field, "" when it had none (the
	// format's default type, "message").
	Name string
	// Data is the event's `data:` lines joined by "\n". It is valid only
	// until the next call of Next: a wire that keeps it copies it.
	Data []byte
}

// MaxEvent is the most bytes one event's data may hold; a longer event
// stops the stream with an error that says so (a wire's events are a
// delta or a whole message, far below it).
const MaxEvent = 64 << 20

// Reader reads events from a stream. Its zero value is not usable: make
// one with NewReader.
type Reader struct {
	r    *bufio.Reader
	line []byte // a line longer than the buffer, put together
	data []byte
	has  bool   // a data field was seen since the last dispatch
	name []byte // the pending event's name
	// names are the event names seen, as strings, up to maxNames: a
	// wire's stream alternates a few (content_block_start, _delta,
	// _stop, ...), each made a string once, not once an event. Kept
	// across Reset, for a pooled reader's next answer.
	names []string
	ev    Event
	err   error
	read  bool // the stream's start was read (its byte order mark dropped)
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 32<<10)}
}

// Next reads up to the end of the next event and reports whether there is
// one; at the end of the stream, or on an error, it returns false and Err
// says which. An event the stream did not finish (no blank line after it
// before the end) is not dispatched, as the format says.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	r.data, r.has, r.name = r.data[:0], false, r.name[:0]
	if !r.read {
		// the format drops one byte order mark at the start of the stream
		r.read = true
		b, err := r.r.Peek(len(bom))
		if string(b) == bom {
			r.r.Discard(len(bom))
		}
		if err != nil && err != io.EOF {
			r.err = err // Peek took it from the buffer: it would be lost
			return false
		}
	}
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && len(line) == 0 {
				r.err = io.EOF
				return false
			}
			if err != io.EOF {
				r.err = err
				return false
			}
			// a last line without its end of line: read it, then stop
		}
		if len(line) == 0 {
			if err == io.EOF {
				r.err = io.EOF
				return false
			}
			if !r.has {
				r.name = r.name[:0] // nothing to dispatch: the format drops it
				continue
			}
			r.dispatch()
			return true
		}
		r.field(line)
		if len(r.data) > MaxEvent {
			r.err = fmt.Errorf("sse: an event's data passed %d bytes", MaxEvent)
			return false
		}
		if err == io.EOF {
			r.err = io.EOF
			return false
		}
	}
}

// maxNames is how many event names a Reader keeps as strings.
const maxNames = 16

// dispatch makes the pending event current. Its name is a string made
// once for each name the stream uses (names), so that a stream of events
// costs no string per event.
func (r *Reader) dispatch() {
	if string(r.name) != r.ev.Name {
		r.ev.Name = r.nameOf(r.name)
	}
	r.ev.Data = r.data
}

// nameOf is b as a string, one of names when b was seen before.
func (r *Reader) nameOf(b []byte) string {
	for _, n := range r.names {
		if string(b) == n {
			return n
		}
	}
	n := string(b)
	if len(r.names) < maxNames {
		r.names = append(r.names, n)
	}
	return n
}

// field takes one non-empty line: a comment, or a field and its value.
func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		return // a comment
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if r.has {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.has = true
	case "event":
		r.name = append(r.name[:0], value...)
	}
	// id and retry mean nothing to a wire that reads one answer; other
	// fields are ignored, as the format says.
}

// readLine is the next line without its end of line (LF or CRLF); it is
// valid until the next call. A last line without an end of line comes
// with io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.line = append(r.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(r.line) > MaxEvent {
				return nil, fmt.Errorf("sse: a line passed %d bytes", MaxEvent)
			}
			line, err = r.r.ReadSlice('\n')
			r.line = append(r.line, line...)
		}
		line = r.line
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, err
}

// bom is the byte order mark a stream may begin with, in UTF-8.
const bom = "\ufeff"

// Event is the event Next read last.
func (r *Reader) Event() Event { return r.ev }

// Err is what stopped the stream: nil at its end, else the read error.
func (r *Reader) Err() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}
