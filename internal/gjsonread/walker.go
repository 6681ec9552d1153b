package gjsonread

import (
	"bytes"

	"github.com/myelin-run/myelin/internal/jsonstring"
)

// Walker passes over JSON checked as encoding/json checks it, at B[I]:
// it reads nothing but where values begin and end, and the keys of the
// objects it is asked to read (Object), and checks nothing (of bytes
// that are not JSON it reads something, never past them nor forever).
// It must not be given JSON that was not checked, and it decodes no
// value: a wire reads the bytes Value gives it with String, Unquoted or
// Int.
type Walker struct {
	B []byte // the JSON
	I int    // where the walk is in B
}

// WS passes white space.
func (w *Walker) WS() {
	for w.I < len(w.B) && (w.B[w.I] == ' ' || w.B[w.I] == '\t' || w.B[w.I] == '\n' || w.B[w.I] == '\r') {
		w.I++
	}
}

// Value passes the value at w and is its bytes.
func (w *Walker) Value() []byte {
	w.WS()
	start := w.I
	w.Skip()
	return w.B[start:w.I]
}

// Skip passes the value at w.
func (w *Walker) Skip() {
	w.WS()
	if w.I >= len(w.B) {
		return
	}
	switch w.B[w.I] {
	case '"':
		w.str()
	case '{', '[':
		depth := 0
		for w.I < len(w.B) {
			switch w.B[w.I] {
			case '"':
				w.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			w.I++
			if depth == 0 {
				return
			}
		}
	default: // a number, true, false or null
		for w.I < len(w.B) {
			switch w.B[w.I] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			w.I++
		}
	}
}

// str passes the string at w: to its first quote after an even number
// of backslashes (none escaping it).
func (w *Walker) str() {
	w.I++
	for {
		q := bytes.IndexByte(w.B[w.I:], '"')
		if q < 0 {
			w.I = len(w.B)
			return
		}
		end := w.I + q
		n := 0
		for end-n-1 >= w.I && w.B[end-n-1] == '\\' {
			n++
		}
		w.I = end + 1
		if n%2 == 0 {
			return
		}
	}
}

// Object reads the object at w, calling f with the index in keys (64 at
// most) of each member whose key is one of keys and w at its value,
// which f must pass: for a key given twice, the first member only, as
// gjson's Map keeps it; a key matched exactly (not without case, as
// encoding/json matches), its escapes decoded by jsonstring. Other
// members, and a value that is not an object, are passed over.
func (w *Walker) Object(keys []string, f func(i int)) {
	w.WS()
	if w.I >= len(w.B) || w.B[w.I] != '{' {
		w.Skip()
		return
	}
	w.I++
	var seen uint64
	for {
		w.WS()
		if w.I >= len(w.B) {
			return // cut off: not from encoding/json
		}
		if w.B[w.I] == '}' {
			w.I++
			return
		}
		raw := w.Value()
		if len(raw) < 2 || raw[0] != '"' {
			return // not JSON: not from encoding/json
		}
		key, ok := raw[1:len(raw)-1], true
		if bytes.IndexByte(raw, '\\') >= 0 {
			k, unq := jsonstring.Unquote(raw)
			key, ok = []byte(k), unq
		}
		w.WS()
		if w.I >= len(w.B) || w.B[w.I] != ':' {
			return
		}
		w.I++
		if i := keyIndex(keys, key); ok && i >= 0 && seen&(1<<i) == 0 {
			seen |= 1 << i
			f(i)
		} else {
			w.Skip()
		}
		w.WS()
		if w.I < len(w.B) && w.B[w.I] == ',' {
			w.I++
		}
	}
}

// keyIndex is the index of key in keys, -1 when it is none of them.
func keyIndex(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

// Array reads the array at w, calling f with w at each element (white
// space passed) and n its index; f must pass the element, or return
// false to end the walk there (w left where f left it). A value that is
// not an array is passed over, and Array is false; an array, read to
// its end or ended by f, is true. How an element is read, and what an
// element of the wrong type does to the array, are the caller's (the
// SDKs differ).
func (w *Walker) Array(f func(n int) bool) bool {
	w.WS()
	if w.I >= len(w.B) || w.B[w.I] != '[' {
		w.Skip()
		return false
	}
	w.I++
	for n := 0; ; n++ {
		w.WS()
		if w.I >= len(w.B) {
			return true // cut off: not from encoding/json
		}
		if w.B[w.I] == ']' {
			w.I++
			return true
		}
		if !f(n) {
			return true
		}
		w.WS()
		if w.I < len(w.B) && w.B[w.I] == ',' {
			w.I++
		}
	}
}
