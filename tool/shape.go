package tool

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// shape is a tool's input schema when it uses only the keywords that say
// what JSON types go where — type, properties, required,
// additionalProperties, items (and description and title, which validate
// nothing) — as the schemas Func infers from a struct do. Such a schema is
// checked on the input's bytes (accepts), without decoding it into values
// for the general validator: an input it accepts is one the general
// validator accepts. It must not reject anything on its own: an input it
// does not accept goes to the general validator, whose error the model
// reads, so the errors stay that validator's.
type shape struct {
	types    uint8             // the JSON types allowed (the type* bits)
	props    map[string]*shape // an object's named properties; nil: any value
	required map[string]int    // bit in a mask of the properties required
	closed   bool              // additionalProperties false: no other property
	extra    *shape            // additionalProperties' schema; nil: any value
	items    *shape            // an array's items; nil: any value
}

// The JSON types of a value, as bits of shape.types.
const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeInteger // a number without fraction or exponent, as the only literal accepted fast
	typeNumber
	typeString
	typeArray
	typeObject
	allTypes = typeNull | typeBoolean | typeInteger | typeNumber | typeString | typeArray | typeObject
)

var typeBits = map[string]uint8{
	"null": typeNull, "boolean": typeBoolean, "integer": typeInteger, "number": typeNumber | typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// shapeOf is s as a shape, or nil when s uses any other keyword (its
// inputs are checked by the general validator alone).
func shapeOf(s *jsonschema.Schema) *shape {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	sh, ok := compileShape(v)
	if !ok || sh == nil {
		return nil
	}
	return sh
}

// compileShape compiles one schema, as decoded JSON: nil and true for a
// schema that accepts any value; false when it cannot be a shape.
func compileShape(v any) (*shape, bool) {
	switch v := v.(type) {
	case bool:
		return nil, v // true: anything; false: nothing, which is no shape
	case map[string]any:
		sh := &shape{types: allTypes}
		for k, kv := range v {
			switch k {
			case "description", "title":
			case "type":
				sh.types = 0
				switch t := kv.(type) {
				case string:
					sh.types = typeBits[t]
				case []any:
					for _, e := range t {
						name, _ := e.(string)
						sh.types |= typeBits[name]
					}
				}
				if sh.types == 0 {
					return nil, false
				}
			case "properties":
				ps, ok := kv.(map[string]any)
				if !ok {
					return nil, false
				}
				sh.props = make(map[string]*shape, len(ps))
				for name, pv := range ps {
					p, ok := compileShape(pv)
					if !ok {
						return nil, false
					}
					sh.props[name] = p
				}
			case "required":
				rs, ok := kv.([]any)
				if !ok || len(rs) > 64 {
					return nil, false
				}
				sh.required = make(map[string]int, len(rs))
				for _, r := range rs {
					name, ok := r.(string)
					if !ok {
						return nil, false
					}
					if _, dup := sh.required[name]; !dup {
						sh.required[name] = len(sh.required)
					}
				}
			case "additionalProperties":
				if b, ok := kv.(bool); ok && !b {
					sh.closed = true
					continue
				}
				e, ok := compileShape(kv)
				if !ok {
					return nil, false
				}
				sh.extra = e
			case "items":
				it, ok := compileShape(kv)
				if !ok {
					return nil, false
				}
				sh.items = it
			default:
				return nil, false
			}
		}
		if sh.types == allTypes && sh.props == nil && sh.required == nil && !sh.closed && sh.extra == nil && sh.items == nil {
			return nil, true // {}: anything
		}
		return sh, true
	}
	return nil, false
}

// accepts reports whether input, valid JSON, is accepted by sh: true only
// when the general validator would accept it too; false when it would
// not, or when sh cannot tell (a key with an escape, a number that might
// not decode as the validator's float64).
func (sh *shape) accepts(input []byte) bool {
	w := walker{b: input}
	return w.value(sh) && w.end()
}

// walker reads a JSON value known to be valid (json.Valid) and checks it
// against shapes as it goes, allocating nothing.
type walker struct {
	b []byte
	i int
}

func (w *walker) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *walker) end() bool {
	w.space()
	return w.i == len(w.b)
}

// value reads one value; sh nil accepts any.
func (w *walker) value(sh *shape) bool {
	w.space()
	if w.i >= len(w.b) {
		return false
	}
	allows := func(t uint8) bool { return sh == nil || sh.types&t != 0 }
	switch c := w.b[w.i]; {
	case c == '{':
		return allows(typeObject) && w.object(sh)
	case c == '[':
		if !allows(typeArray) {
			return false
		}
		var items *shape
		if sh != nil {
			items = sh.items
		}
		w.i++
		w.space()
		if w.i < len(w.b) && w.b[w.i] == ']' {
			w.i++
			return true
		}
		for {
			if !w.value(items) {
				return false
			}
			w.space()
			if w.i >= len(w.b) {
				return false
			}
			w.i++ // ',' or ']'
			if w.b[w.i-1] == ']' {
				return true
			}
		}
	case c == '"':
		_, _, ok := w.str()
		return ok && allows(typeString)
	case c == 't':
		w.i += len("true")
		return allows(typeBoolean)
	case c == 'f':
		w.i += len("false")
		return allows(typeBoolean)
	case c == 'n':
		w.i += 4
		return allows(typeNull)
	default:
		return w.number(sh)
	}
}

// number reads a number: an integer literal of at most 15 digits is an
// integer (and a number); a literal with a fraction and no exponent, of at
// most 20 characters, is a number; any other cannot be told apart from
// one that the validator's float64 would not hold, so it is not accepted.
func (w *walker) number(sh *shape) bool {
	start, frac := w.i, false
	for w.i < len(w.b) {
		c := w.b[w.i]
		if c == '.' {
			frac = true
		} else if c == 'e' || c == 'E' {
			return false
		} else if c != '-' && c != '+' && (c < '0' || c > '9') {
			break
		}
		w.i++
	}
	n := w.i - start
	if sh == nil {
		return n <= 20
	}
	if !frac && n <= 15 {
		return sh.types&(typeInteger|typeNumber) != 0
	}
	return frac && n <= 20 && sh.types&typeNumber != 0
}

// str reads a string and returns its bytes between the quotes, and
// whether it holds an escape.
func (w *walker) str() (s []byte, escaped, ok bool) {
	w.i++ // '"'
	start := w.i
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '\\':
			escaped = true
			w.i += 2
			continue
		case '"':
			s = w.b[start:w.i]
			w.i++
			return s, escaped, true
		}
		w.i++
	}
	return nil, false, false
}

// object reads an object against sh.
func (w *walker) object(sh *shape) bool {
	w.i++ // '{'
	var seen uint64
	for {
		w.space()
		if w.i >= len(w.b) {
			return false
		}
		if w.b[w.i] == '}' {
			w.i++
			break
		}
		if w.b[w.i] == ',' {
			w.i++
			continue
		}
		key, escaped, ok := w.str()
		if !ok || escaped && sh != nil {
			return false // an escaped key is left to the validator
		}
		w.space()
		w.i++ // ':'
		var sub *shape
		if sh != nil {
			p, named := sh.props[string(key)]
			switch {
			case named:
				sub = p
			case sh.closed:
				return false
			default:
				sub = sh.extra
			}
			if bit, req := sh.required[string(key)]; req {
				seen |= 1 << bit
			}
		}
		if !w.value(sub) {
			return false
		}
	}
	return sh == nil || seen == 1<<len(sh.required)-1
}
