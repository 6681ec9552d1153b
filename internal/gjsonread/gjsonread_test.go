package gjsonread

import (
	"math"
	"strconv"
	"testing"
)

// String is gjson's String of any JSON value; of a string, gjson's own
// unescaping, which is not encoding/json's (the table the anthropic
// wire's apierror_test held for its gjsonString, which its
// TestStringsAreUnescapedAsGjsonDoes still holds to the SDK's).
func TestStringIsGjsonsString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\"raw \xff\"", "raw \xff"},
		{`"\ud83d\ude00"`, "\U0001F600"},
		{`"\ud800\u0041z"`, "\uFFFDz"},
		{`"\udc00\ud800"`, "\uFFFD"},
		{`"\ud800"`, "\uFFFD"},
		{`"\ud800x\u0041"`, "\uFFFDxA"},
		{`"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{`"plain"`, "plain"},
		{`""`, ""},
		{`null`, ""},
		{``, ""},
		{`true`, "true"},
		{`false`, "false"},
		{`12345678901234567890123`, "12345678901234567890123"},
		{`-7`, "-7"},
		{`1.50`, "1.5"},
		{`1e2`, "100"},
		{`-2.5E-1`, "-0.25"},
		{`1e400`, "+Inf"},
		{`-1e400`, "-Inf"},
		{`{"a": [1]}`, `{"a": [1]}`},
		{`[1, "x"]`, `[1, "x"]`},
	} {
		if got := String([]byte(tc.in)); got != tc.want {
			t.Errorf("String(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Unquoted is String but for a string's escapes, decoded as jsonstring
// decodes them: after a lone surrogate, the next escape's character is
// kept where gjson dropped it.
func TestUnquotedKeepsTheEscapeAfterALoneSurrogate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"\ud800\u0041z"`, "\uFFFDAz"},
		{`"\ud83d\ude00"`, "\U0001F600"},
		{"\"raw \xff\"", "raw \xff"},
		{`"a\nb"`, "a\nb"},
		{`null`, ""},
		{`1.50`, "1.5"},
		{`{"a":1}`, `{"a":1}`},
	} {
		if got := Unquoted([]byte(tc.in)); got != tc.want {
			t.Errorf("Unquoted(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Int is gjson's Int: a number or a string of one, cut to its integer
// part and to int64's range; 1 for true; 0 for anything else.
func TestIntIsGjsonsInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{`42`, 42},
		{`-42`, -42},
		{`42.9`, 42},
		{`-42.9`, -42},
		{`1e3`, 1000},
		{`"17"`, 17},
		{`"17.8"`, 17},
		{`"-3"`, -3},
		{`"x"`, 0},
		{`""`, 0},
		{`true`, 1},
		{`false`, 0},
		{`null`, 0},
		{``, 0},
		{`{"a":1}`, 0},
		{`[1]`, 0},
		{`9007199254740993`, 9007199254740993}, // past 2^53: read as digits
		{`9223372036854775807`, math.MaxInt64},
		{`9223372036854775808`, math.MaxInt64},
		{`-9223372036854775808`, math.MinInt64},
		{`-9223372036854775809`, math.MinInt64},
		{`99999999999999999999`, math.MaxInt64},
		{`1e30`, math.MaxInt64},
		{`-1e30`, math.MinInt64},
		{`"99999999999999999999"`, math.MaxInt64},
	} {
		if got := Int([]byte(tc.in)); got != tc.want {
			t.Errorf("Int(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// parseInt is gjson's: past uint64's range it finds the wrap only where
// n*10+d is less than n, so a few numbers of 20 digits are read wrapped.
func TestParseIntWrapsAsGjsonsDoes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"123", 123, true},
		{"-", 0, false},
		{"", 0, false},
		{"12a", 0, false},
		{"1.5", 0, false},
		{"18446744073709551615", math.MaxInt64, true},
		{"18446744073709551616", math.MaxInt64, true},       // the wrap found (to 0): the bound
		{"-18446744073709551616", math.MinInt64, true},      // the same, negative
		{"21000000000000000000", 2553255926290448384, true}, // the wrap not found: read wrapped
		{"99999999999999999999x", 0, false},                 // not digits past the wrap
		{"-" + strconv.FormatInt(math.MaxInt64, 10), -math.MaxInt64, true},
	} {
		got, ok := parseInt(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseInt(%q) = %d, %v, want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
