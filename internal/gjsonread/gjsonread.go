// Package gjsonread reads a JSON value the way gjson (under the
// Stainless-generated SDKs' apijson: openai-go, anthropic-sdk-go) read
// it into a struct's field, so that a wire that no longer links its SDK
// reads an answer as the SDK did: a string field takes any JSON value
// (String, Unquoted), an integer field a number or a string of one
// (Int), and an object's members are found by exact key, the first of a
// key given twice (Walker.Object); an array's elements are handed to the
// caller (Walker.Array), who decides what one of the wrong type does (the
// SDKs differ).
//
// It owns that lenient reading and nothing else: it checks nothing (its
// callers give it JSON encoding/json or jsonscan checked), decides no
// wire's shapes or keys (those are the wires'), and must not be used to
// read what the wire reads as encoding/json does (the stream's events,
// through jsonscan). A JSON string's escapes are decoded by package
// jsonstring (Unquoted, Int, the keys) or, where the SDK's exact text
// is wanted, as gjson decodes them (String).
package gjsonread

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/myelin-run/myelin/internal/jsonstring"
)

// String is the string gjson's String gives of the JSON value v: a
// string's value as gjson unescapes it (bytes that are not UTF-8 kept;
// a lone escaped surrogate followed by another \u escape is U+FFFD, the
// second escape consumed with it), an integer's digits (whatever its
// size), another number as a float's shortest form (+Inf or -Inf past
// float64's range), true or false, an object's or array's JSON text, ""
// for null or nothing.
func String(v []byte) string {
	if len(v) > 0 && v[0] == '"' {
		return unescape(v)
	}
	return text(v)
}

// Unquoted is String, but a JSON string's value is the one
// jsonstring.Unquote gives (every escape decoded, every other byte kept
// as it came), which differs from gjson's in one case: of a lone escaped
// surrogate followed by another \u escape, it keeps the second's
// character after U+FFFD, as the wires' streams do.
func Unquoted(v []byte) string {
	if len(v) > 0 && v[0] == '"' {
		s, _ := jsonstring.Unquote(v)
		return s
	}
	return text(v)
}

// text is String of a value that is not a string.
func text(v []byte) string {
	switch {
	case len(v) == 0 || string(v) == "null":
		return ""
	case v[0] == '-' || ('0' <= v[0] && v[0] <= '9'):
		digits := v
		if digits[0] == '-' {
			digits = digits[1:]
		}
		for _, c := range digits {
			if c < '0' || c > '9' {
				f, _ := strconv.ParseFloat(string(v), 64)
				return strconv.FormatFloat(f, 'f', -1, 64)
			}
		}
	}
	return string(v)
}

// Int is the integer gjson's Int gives of the JSON value v: a number (or
// a string of one, decoded by jsonstring.Unquote) cut to its integer
// part and to int64's range; 1 for true; 0 for anything else.
func Int(v []byte) int64 {
	switch {
	case len(v) == 0:
		return 0
	case string(v) == "true":
		return 1
	case v[0] == '"':
		s, _ := jsonstring.Unquote(v)
		if n, ok := parseInt(s); ok {
			return n
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatToInt(f)
		}
		return 0
	case v[0] == '-' || ('0' <= v[0] && v[0] <= '9'):
		f, _ := strconv.ParseFloat(string(v), 64)
		if -(1<<53-1) <= f && f <= 1<<53-1 {
			return int64(f)
		}
		if n, ok := parseInt(string(v)); ok {
			return n
		}
		return floatToInt(f)
	}
	return 0
}

// parseInt reads s, digits after an optional "-", as gjson's parseInt
// does: past int64's range, its bound — past uint64's, as its check
// finds it (n*10+d less than n: a few numbers of 20 digits wrap past it
// and are read wrapped, as the SDKs read them); false for anything else.
func parseInt(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		next := n*10 + uint64(c-'0')
		if next < n {
			// wrapped: the bound, when the rest are digits
			for ; i < len(s); i++ {
				if s[i] < '0' || s[i] > '9' {
					return 0, false
				}
			}
			n = math.MaxUint64
			break
		}
		n = next
	}
	switch {
	case neg && n > 1<<63:
		return math.MinInt64, true
	case neg:
		return -int64(n), true
	case n > math.MaxInt64:
		return math.MaxInt64, true
	}
	return int64(n), true
}

// floatToInt is f cut to its integer part, within int64's range (gjson's
// f2i).
func floatToInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f < math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// unescape is the value of the JSON string s (quotes included, valid
// JSON) as gjson unescapes it, which is not encoding/json's way: bytes
// that are not UTF-8 are kept as they are; a surrogate escape (\uD800 to
// \uDFFF) followed by another \u escape is decoded with it as a pair,
// U+FFFD when they are not one (the second is consumed all the same),
// and one followed by anything else is U+FFFD.
func unescape(s []byte) string {
	s = s[1 : len(s)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 4
			if utf16.IsSurrogate(r) && len(s[i+1:]) >= 6 && s[i+1] == '\\' && s[i+2] == 'u' {
				r = utf16.DecodeRune(r, hex4(s[i+3:]))
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, c)
		}
	}
	return string(out)
}

// hex4 is the rune of the four hexadecimal digits b starts with.
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n)
}
