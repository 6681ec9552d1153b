package otlpwire

import (
	"math"
	"unicode/utf8"
)

// The protobuf wire types this package writes.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// appendTag appends the key of field num with wire type typ.
func appendTag(b []byte, num, typ int) []byte {
	return appendVarint(b, uint64(num)<<3|uint64(typ))
}

// appendVarint appends v as a base-128 varint.
func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// varintSize is the number of bytes appendVarint writes for v.
func varintSize(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendFixed64 appends v little-endian in 8 bytes.
func appendFixed64(b []byte, v uint64) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24),
		byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

// appendFixed32 appends v little-endian in 4 bytes.
func appendFixed32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// appendVarintField appends field num as a varint, omitted when zero
// (proto3 implicit presence).
func appendVarintField(b []byte, num int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendVarint(appendTag(b, num, wireVarint), v)
}

// appendBoolField appends field num as a bool, omitted when false.
func appendBoolField(b []byte, num int, v bool) []byte {
	if !v {
		return b
	}
	return append(appendTag(b, num, wireVarint), 1)
}

// appendFixed64Field appends field num as a fixed64, omitted when zero.
func appendFixed64Field(b []byte, num int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendFixed64(appendTag(b, num, wireFixed64), v)
}

// appendFixed32Field appends field num as a fixed32, omitted when zero.
func appendFixed32Field(b []byte, num int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return appendFixed32(appendTag(b, num, wireFixed32), v)
}

// appendDouble appends field num as a double, always (a oneof member or a
// proto3 optional field).
func appendDouble(b []byte, num int, v float64) []byte {
	return appendFixed64(appendTag(b, num, wireFixed64), math.Float64bits(v))
}

// appendDoubleField appends field num as a double, omitted when it is +0 as
// the protobuf runtime does (-0 and NaN are written).
func appendDoubleField(b []byte, num int, v float64) []byte {
	if v == 0 && !math.Signbit(v) {
		return b
	}
	return appendDouble(b, num, v)
}

// appendSint32Field appends field num zigzag-encoded, omitted when zero.
func appendSint32Field(b []byte, num int, v int32) []byte {
	return appendVarintField(b, num, uint64(uint32(v<<1)^uint32(v>>31)))
}

// appendBytesField appends field num as bytes, omitted when empty.
func appendBytesField(b []byte, num int, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = appendVarint(appendTag(b, num, wireBytes), uint64(len(v)))
	return append(b, v...)
}

// appendStringField appends field num as a string, omitted when empty.
func appendStringField(b []byte, num int, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(b, num, s)
}

// appendString appends field num as a string, always (a oneof member), made
// well formed by wellFormedLen's rule.
func appendString(b []byte, num int, s string) []byte {
	b = appendTag(b, num, wireBytes)
	if utf8.ValidString(s) {
		b = appendVarint(b, uint64(len(s)))
		return append(b, s...)
	}
	b = appendVarint(b, uint64(wellFormedLen(s)))
	return appendWellFormed(b, s)
}

// wellFormedLen is the length of s once each byte of s that does not begin a
// valid UTF-8 sequence is replaced by U+FFFD (3 bytes).
func wellFormedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += len(string(utf8.RuneError))
		} else {
			n += size
		}
		i += size
	}
	return n
}

// appendWellFormed appends s with each byte that does not begin a valid UTF-8
// sequence replaced by U+FFFD: the same text as string([]rune(s)).
func appendWellFormed(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

// beginMessage appends the key of the embedded message field num and a
// one-byte length placeholder; it returns where the message body starts, for
// endMessage.
func beginMessage(b []byte, num int) ([]byte, int) {
	b = append(appendTag(b, num, wireBytes), 0)
	return b, len(b)
}

// endMessage writes the length of the message body that began at start,
// moving the body on when the length needs more than the placeholder's byte.
func endMessage(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	extra := varintSize(uint64(n)) - 1
	for range extra {
		b = append(b, 0)
	}
	copy(b[start+extra:], b[start:start+n])
	appendVarint(b[start-1:start-1], uint64(n))
	return b
}
