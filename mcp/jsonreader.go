package mcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/myelin-run/myelin/internal/jsonstring"
)

// jsonReader reads one JSON value from a stream without holding it: what
// it keeps is what its caller asks for (a key, a small value whole), and a
// string can be decoded piece by piece into a writer. It checks the syntax
// as it goes, as encoding/json would (strictly: an error is a value the
// SDK would not decode either). It is how a large reply's text reaches a
// file (takeSpooled).
type jsonReader struct {
	r     *bufio.Reader
	off   int64   // bytes read so far
	rec   *[]byte // when set, every byte read is appended to it
	limit int     // the most rec may hold (-1: no bound)
	depth int
}

// errNotObject is what object says of a value that is not an object.
var errNotObject = errors.New("not a JSON object")

// maxDepth is encoding/json's bound on nesting.
const maxDepth = 10000

func (p *jsonReader) syntax(what string) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.off, what)
}

// take consumes n buffered bytes, recording them when asked to.
func (p *jsonReader) take(n int) error {
	if p.rec != nil {
		if p.limit >= 0 && len(*p.rec)+n > p.limit {
			return errNotText
		}
		b, _ := p.r.Peek(n)
		*p.rec = append(*p.rec, b...)
	}
	n, err := p.r.Discard(n)
	p.off += int64(n)
	return err
}

func (p *jsonReader) next() (byte, error) {
	b, err := p.r.Peek(1)
	if err != nil {
		return 0, p.syntax("unexpected end")
	}
	c := b[0]
	return c, p.take(1)
}

// space skips white space.
func (p *jsonReader) space() {
	for {
		b, err := p.r.Peek(1)
		if err != nil {
			return
		}
		switch b[0] {
		case ' ', '\t', '\n', '\r':
			if p.take(1) != nil {
				return
			}
		default:
			return
		}
	}
}

// peek is the next byte after white space, 0 at the end.
func (p *jsonReader) peek() byte {
	p.space()
	b, err := p.r.Peek(1)
	if err != nil {
		return 0
	}
	return b[0]
}

func (p *jsonReader) expect(c byte) error {
	p.space()
	b, err := p.next()
	if err != nil {
		return err
	}
	if b != c {
		return p.syntax(fmt.Sprintf("want %q, got %q", c, b))
	}
	return nil
}

// end checks that nothing but white space follows.
func (p *jsonReader) end() error {
	p.space()
	if _, err := p.r.Peek(1); err != io.EOF {
		return p.syntax("more after the value")
	}
	return nil
}

// object reads an object, calling value with each key (decoded) to read
// its value. A value that is not an object is errNotObject, and nothing of
// it is read.
func (p *jsonReader) object(value func(key string) error) error {
	if p.peek() != '{' {
		return errNotObject
	}
	if p.depth++; p.depth > maxDepth {
		return p.syntax("nested too deep")
	}
	defer func() { p.depth-- }()
	if err := p.take(1); err != nil {
		return err
	}
	if p.peek() == '}' {
		return p.take(1)
	}
	for {
		if p.peek() != '"' {
			return p.syntax("want a key")
		}
		key, err := p.key()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		p.space()
		if err := value(key); err != nil {
			return err
		}
		p.space()
		c, err := p.next()
		switch {
		case err != nil:
			return err
		case c == '}':
			return nil
		case c != ',':
			return p.syntax(fmt.Sprintf("want ',' or '}', got %q", c))
		}
	}
}

// array reads an array, calling elem to read each element.
func (p *jsonReader) array(elem func() error) error {
	if p.peek() != '[' {
		return errNotText
	}
	if p.depth++; p.depth > maxDepth {
		return p.syntax("nested too deep")
	}
	defer func() { p.depth-- }()
	if err := p.take(1); err != nil {
		return err
	}
	if p.peek() == ']' {
		return p.take(1)
	}
	for {
		p.space()
		if err := elem(); err != nil {
			return err
		}
		p.space()
		c, err := p.next()
		switch {
		case err != nil:
			return err
		case c == ']':
			return nil
		case c != ',':
			return p.syntax(fmt.Sprintf("want ',' or ']', got %q", c))
		}
	}
}

// key reads an object's key; one longer than 1 KiB is errNotText (no key
// myelin reads is).
func (p *jsonReader) key() (string, error) {
	var k []byte
	err := p.str(func(b []byte) error {
		if len(k)+len(b) > 1<<10 {
			return errNotText
		}
		k = append(k, b...)
		return nil
	})
	return string(k), err
}

// raw reads the next value whole and returns its bytes, as
// json.RawMessage holds them; a value over limit bytes (-1: no bound) is
// errNotText.
func (p *jsonReader) raw(limit int) ([]byte, error) {
	p.space()
	var buf []byte
	outer, outerLimit := p.rec, p.limit
	p.rec, p.limit = &buf, limit
	err := p.skip()
	p.rec, p.limit = outer, outerLimit
	if outer != nil {
		if outerLimit >= 0 && len(*outer)+len(buf) > outerLimit {
			return nil, errNotText
		}
		*outer = append(*outer, buf...)
	}
	return buf, err
}

// skip reads the next value, checking it, and keeps nothing.
func (p *jsonReader) skip() error {
	switch c := p.peek(); {
	case c == '{':
		return p.object(func(string) error { return p.skip() })
	case c == '[':
		return p.array(p.skip)
	case c == '"':
		return p.str(func([]byte) error { return nil })
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 0:
		return p.syntax("unexpected end")
	default:
		return p.syntax(fmt.Sprintf("unexpected %q", c))
	}
}

func (p *jsonReader) literal(word string) error {
	for i := 0; i < len(word); i++ {
		c, err := p.next()
		if err != nil {
			return err
		}
		if c != word[i] {
			return p.syntax("want " + word)
		}
	}
	return nil
}

// number reads a number as JSON writes them: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func (p *jsonReader) number() error {
	at := func() byte {
		b, err := p.r.Peek(1)
		if err != nil {
			return 0
		}
		return b[0]
	}
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	digits := func() (int, error) {
		n := 0
		for digit(at()) {
			if err := p.take(1); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	if at() == '-' {
		if err := p.take(1); err != nil {
			return err
		}
	}
	switch {
	case at() == '0':
		if err := p.take(1); err != nil {
			return err
		}
	case digit(at()):
		if _, err := digits(); err != nil {
			return err
		}
	default:
		return p.syntax("want a digit")
	}
	if at() == '.' {
		if err := p.take(1); err != nil {
			return err
		}
		if n, err := digits(); err != nil || n == 0 {
			return cmpErr(err, p.syntax("want a digit after '.'"))
		}
	}
	if c := at(); c == 'e' || c == 'E' {
		if err := p.take(1); err != nil {
			return err
		}
		if c := at(); c == '+' || c == '-' {
			if err := p.take(1); err != nil {
				return err
			}
		}
		if n, err := digits(); err != nil || n == 0 {
			return cmpErr(err, p.syntax("want a digit in the exponent"))
		}
	}
	return nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// str reads a string, giving emit its decoded bytes in pieces. It decodes
// as package result's FromMCP does (jsonstring.Read): the bytes between
// escapes as they are, invalid UTF-8 included; an escaped surrogate pair
// as the character it encodes, a lone escaped surrogate as U+FFFD.
func (p *jsonReader) str(emit func([]byte) error) error {
	if c, err := p.next(); err != nil || c != '"' {
		return cmpErr(err, p.syntax("want a string"))
	}
	var esc [8]byte
	for {
		if _, err := p.r.Peek(1); err != nil {
			return p.syntax("a string without its end")
		}
		buf, _ := p.r.Peek(p.r.Buffered())
		i := 0
		for i < len(buf) && buf[i] != '"' && buf[i] != '\\' && buf[i] >= 0x20 {
			i++
		}
		if i > 0 {
			if err := emit(buf[:i]); err != nil {
				return err
			}
			if err := p.take(i); err != nil {
				return err
			}
			continue
		}
		c := buf[0]
		if err := p.take(1); err != nil {
			return err
		}
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return p.syntax("a control character in a string")
		}
		e, err := p.next()
		if err != nil {
			return err
		}
		var out []byte
		switch c, ok := jsonstring.Escape(e); {
		case ok:
			out = append(esc[:0], c)
		case e == 'u':
			r, n, ok := p.escapedRune()
			if !ok {
				return p.syntax(`want four hex digits after \u`)
			}
			if err := p.take(n); err != nil {
				return err
			}
			out = utf8.AppendRune(esc[:0], r)
		default:
			return p.syntax(fmt.Sprintf(`an unknown escape \%c`, e))
		}
		if err := emit(out); err != nil {
			return err
		}
	}
}

// escapedRune reads (without consuming) the hex digits after `\u`, and a
// following `\uXXXX` when they are a high surrogate, and returns the rune
// and how many bytes it takes (jsonstring.UnicodeEscape).
func (p *jsonReader) escapedRune() (rune, int, bool) {
	b, _ := p.r.Peek(10)
	return jsonstring.UnicodeEscape(b)
}
