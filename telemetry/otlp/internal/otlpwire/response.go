package otlpwire

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// errTruncated is wrapped by the errors of ReadPartialSuccess for a body that
// ends inside a field.
var errTruncated = errors.New("truncated")

// ReadPartialSuccess reads an ExportTraceServiceResponse or
// ExportMetricsServiceResponse body (the two have the same shape): the
// partial_success field (1) and in it the rejected spans or data points (1)
// and the error message (2). Both are zero when the field is absent; when it
// occurs more than once the occurrences merge as protobuf merges them (the
// last value of each field wins). Unknown fields are skipped, as is a known
// field of an unexpected wire type (the protobuf runtime keeps those as
// unknown). A message that is not valid UTF-8 is returned made well formed
// (see the package doc) where proto.Unmarshal would fail. A malformed body
// is an error that says what was wrong and at which byte.
func ReadPartialSuccess(body []byte) (rejected int64, message string, err error) {
	err = readFields(body, 0, func(num, typ int, v uint64, field []byte, at int) error {
		if num != 1 || typ != wireBytes {
			return nil
		}
		return readFields(field, at, func(num, typ int, v uint64, field []byte, _ int) error {
			switch {
			case num == 1 && typ == wireVarint:
				rejected = int64(v)
			case num == 2 && typ == wireBytes:
				message = wellFormed(field)
			}
			return nil
		})
	})
	if err != nil {
		return 0, "", fmt.Errorf("otlpwire: reading an export response: %w", err)
	}
	return rejected, message, nil
}

// wellFormed is b as a string, made well formed as appendString makes it.
func wellFormed(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(appendWellFormed(nil, string(b)))
}

// readFields calls f for each field of the message b (whose first byte is at
// offset base of the body, for errors): its number, wire type, and its value
// (v for a varint, fixed32 or fixed64; field for a length-delimited one).
// Groups are skipped whole.
func readFields(b []byte, base int, f func(num, typ int, v uint64, field []byte, at int) error) error {
	for i := 0; i < len(b); {
		at := base + i
		num, typ, n, err := readKey(b[i:])
		if err != nil {
			return fmt.Errorf("field key at byte %d: %w", at, err)
		}
		i += n
		var v uint64
		var field []byte
		switch typ {
		case wireVarint:
			v, n, err = readVarint(b[i:])
			if err != nil {
				return fmt.Errorf("varint of field %d at byte %d: %w", num, at, err)
			}
			i += n
		case wireFixed64, wireFixed32:
			size := 8
			if typ == wireFixed32 {
				size = 4
			}
			if len(b)-i < size {
				return fmt.Errorf("fixed%d field %d at byte %d: %w", size*8, num, at, errTruncated)
			}
			for k := size - 1; k >= 0; k-- {
				v = v<<8 | uint64(b[i+k])
			}
			i += size
		case wireBytes:
			l, n, err := readVarint(b[i:])
			if err != nil {
				return fmt.Errorf("length of field %d at byte %d: %w", num, at, err)
			}
			i += n
			if l > uint64(len(b)-i) {
				return fmt.Errorf("field %d at byte %d is %d bytes long, %d are left: %w", num, at, l, len(b)-i, errTruncated)
			}
			field = b[i : i+int(l)]
			i += int(l)
		case 3: // start group
			// depth 0: proto.Unmarshal takes 10000 groups nested in this
			// one (10001 in all), at the top or inside a message
			n, err := skipGroup(b[i:], num, 0)
			if err != nil {
				return fmt.Errorf("group field %d at byte %d: %w", num, at, err)
			}
			i += n
			continue
		default:
			return fmt.Errorf("field %d at byte %d has wire type %d, which is not a protobuf wire type here", num, at, typ)
		}
		if err := f(int(num), typ, v, field, base+i-len(field)); err != nil {
			return err
		}
	}
	return nil
}

// maxGroupDepth is how deep groups may nest, the protobuf runtime's
// default recursion limit.
const maxGroupDepth = 10000

// skipGroup is the length of the group body b up to and including the end
// group key of field num; depth is how deep the group is nested.
func skipGroup(b []byte, num uint64, depth int) (int, error) {
	if depth > maxGroupDepth {
		return 0, fmt.Errorf("groups nested deeper than %d", maxGroupDepth)
	}
	for i := 0; i < len(b); {
		field, typ, n, err := readKey(b[i:])
		if err != nil {
			return 0, err
		}
		i += n
		switch typ {
		case wireVarint:
			_, n, err = readVarint(b[i:])
			if err != nil {
				return 0, err
			}
			i += n
		case wireFixed64:
			i += 8
		case wireFixed32:
			i += 4
		case wireBytes:
			l, n, err := readVarint(b[i:])
			if err != nil {
				return 0, err
			}
			i += n
			if l > uint64(len(b)-i) {
				return 0, errTruncated
			}
			i += int(l)
		case 3:
			n, err := skipGroup(b[i:], field, depth+1)
			if err != nil {
				return 0, err
			}
			i += n
		case 4:
			if field != num {
				return 0, fmt.Errorf("group ends with field %d, not %d", field, num)
			}
			return i, nil
		default:
			return 0, fmt.Errorf("wire type %d is not a protobuf wire type", typ)
		}
		if i > len(b) {
			return 0, errTruncated
		}
	}
	return 0, fmt.Errorf("no end of group: %w", errTruncated)
}

// readKey reads the field key at the start of b: its field number, which
// must be in protobuf's range, its wire type, and its length.
func readKey(b []byte) (num uint64, typ, n int, err error) {
	key, n, err := readVarint(b)
	if err != nil {
		return 0, 0, 0, err
	}
	num = key >> 3
	if num == 0 || num > 1<<29-1 {
		return 0, 0, 0, fmt.Errorf("field number %d is out of range", num)
	}
	return num, int(key & 7), n, nil
}

// readVarint reads a base-128 varint at the start of b: its value and its
// length.
func readVarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if i == 9 && c > 1 { // the tenth byte holds bit 63 and no continuation
			return 0, 0, errors.New("varint overflows 64 bits")
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errTruncated
}
