package otlpwire

import (
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Field numbers of opentelemetry.proto.common.v1.AnyValue.
const (
	anyString = 1
	anyBool   = 2
	anyInt    = 3
	anyDouble = 4
	anyArray  = 5
)

// appendKeyValues appends each attribute as the KeyValue message field num,
// but one whose key, made well formed, equals a later one's (see clashes).
func appendKeyValues(b []byte, num int, kvs []attribute.KeyValue) []byte {
	return appendEach(b, num, len(kvs), func(i int) attribute.KeyValue { return kvs[i] })
}

// appendSet appends the attributes of set, in its (key) order, as the
// KeyValue message field num, but one whose key, made well formed, equals a
// later one's (see clashes).
func appendSet(b []byte, num int, set *attribute.Set) []byte {
	return appendEach(b, num, set.Len(), func(i int) attribute.KeyValue { kv, _ := set.Get(i); return kv })
}

// appendEach appends the n attributes at(i) as the KeyValue message field
// num, but one whose key, made well formed, equals a later one's: written
// once as given, and, when a key was made well formed, written again
// without the clashes.
func appendEach(b []byte, num, n int, at func(int) attribute.KeyValue) []byte {
	start, valid := len(b), true
	for i := range n {
		var ok bool
		b, ok = appendKeyValue(b, num, at(i))
		valid = valid && ok
	}
	if valid {
		return b
	}
	b = b[:start]
	skip := clashes(n, func(i int) attribute.Key { return at(i).Key })
	for i := range n {
		if !skip[i] {
			b, _ = appendKeyValue(b, num, at(i))
		}
	}
	return b
}

// clashes says which of the n keys of a list (key(i)), some not valid
// UTF-8, are not written: those that, made well formed, equal a later key
// that differs from them as given (OTLP: the keys of a list MUST be unique,
// and the SDK keeps the last of equal keys). Keys equal as given are left as
// the caller gave them (the official writes them all).
func clashes(n int, key func(int) attribute.Key) []bool {
	last := make(map[string]int, n) // a key made well formed: its last index
	for i := range n {
		last[wellFormed([]byte(key(i)))] = i
	}
	skip := make([]bool, n)
	for i := range n {
		k := key(i)
		if j := last[wellFormed([]byte(k))]; j != i && key(j) != k {
			skip[i] = true
		}
	}
	return skip
}

// appendKeyValue appends kv as the KeyValue message field num: key (1) and
// value (2), the value always present as the official transform writes it;
// and whether the key was valid UTF-8 (else it was made well formed).
func appendKeyValue(b []byte, num int, kv attribute.KeyValue) ([]byte, bool) {
	b, start := beginMessage(b, num)
	valid := true
	if k := string(kv.Key); k != "" {
		b = appendTag(b, 1, wireBytes)
		if valid = utf8.ValidString(k); valid {
			b = append(appendVarint(b, uint64(len(k))), k...)
		} else {
			b = appendWellFormed(appendVarint(b, uint64(wellFormedLen(k))), k)
		}
	}
	b = appendAnyValue(b, 2, kv.Value)
	return endMessage(b, start), valid
}

// appendAnyValue appends v as the AnyValue message field num. An EMPTY value
// is an AnyValue with no value set; a kind this package does not know is the
// string "INVALID", as the official transform writes it.
func appendAnyValue(b []byte, num int, v attribute.Value) []byte {
	b, start := beginMessage(b, num)
	switch v.Type() {
	case attribute.EMPTY:
	case attribute.BOOL:
		b = appendBoolValue(b, v.AsBool())
	case attribute.INT64:
		b = appendIntValue(b, v.AsInt64())
	case attribute.FLOAT64:
		b = appendDouble(b, anyDouble, v.AsFloat64())
	case attribute.STRING:
		b = appendString(b, anyString, v.AsString())
	case attribute.BOOLSLICE:
		b = appendArray(b, v.AsBoolSlice(), appendBoolValue)
	case attribute.INT64SLICE:
		b = appendArray(b, v.AsInt64Slice(), appendIntValue)
	case attribute.FLOAT64SLICE:
		b = appendArray(b, v.AsFloat64Slice(), func(b []byte, f float64) []byte {
			return appendDouble(b, anyDouble, f)
		})
	case attribute.STRINGSLICE:
		b = appendArray(b, v.AsStringSlice(), func(b []byte, s string) []byte {
			return appendString(b, anyString, s)
		})
	default:
		b = appendString(b, anyString, "INVALID")
	}
	return endMessage(b, start)
}

// appendBoolValue appends the bool_value member of an AnyValue (a oneof
// member: written even when false).
func appendBoolValue(b []byte, v bool) []byte {
	b = appendTag(b, anyBool, wireVarint)
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendIntValue appends the int_value member of an AnyValue (written even
// when zero).
func appendIntValue(b []byte, v int64) []byte {
	return appendVarint(appendTag(b, anyInt, wireVarint), uint64(v))
}

// appendArray appends the array_value member of an AnyValue: an ArrayValue
// whose values (1) are AnyValues holding each element as elem writes it.
func appendArray[T any](b []byte, vs []T, elem func([]byte, T) []byte) []byte {
	b, start := beginMessage(b, anyArray)
	for _, v := range vs {
		var inner int
		b, inner = beginMessage(b, 1)
		b = elem(b, v)
		b = endMessage(b, inner)
	}
	return endMessage(b, start)
}

// appendResource appends the Resource message field num: its attributes (1);
// the SDK's resource has no dropped count, so none is written.
func appendResource(b []byte, num int, r *resource.Resource) []byte {
	b, start := beginMessage(b, num)
	set := r.Set()
	b = appendSet(b, 1, set)
	return endMessage(b, start)
}

// appendScope appends the InstrumentationScope message field num: name (1),
// version (2), attributes (3). Its schema URL is the enclosing message's.
func appendScope(b []byte, num int, s instrumentation.Scope) []byte {
	b, start := beginMessage(b, num)
	b = appendStringField(b, 1, s.Name)
	b = appendStringField(b, 2, s.Version)
	b = appendSet(b, 3, &s.Attributes)
	return endMessage(b, start)
}
