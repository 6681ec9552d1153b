package gjsonread

import (
	"fmt"
	"strings"
	"testing"
)

// Object calls f once per key it is given, the first member of a key
// given twice (null included), a key matched exactly after its escapes
// are decoded; other members and values that are not objects are passed
// over, and the walk ends after the value.
func TestObjectReadsTheFirstMemberOfEachKey(t *testing.T) {
	keys := []string{"a", "b"}
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"b":"x"}`, `a=1 b="x"`},
		{`{"a":null,"a":2}`, `a=null`},
		{`{"b":[1,{"a":3}],"a":{"b":4}}`, `b=[1,{"a":3}] a={"b":4}`},
		{`{"\u0061":5}`, `a=5`},
		{`{"A":5,"c":6}`, ``},
		{` { "a" : 7 } `, `a=7`},
		{`[{"a":1}]`, ``},
		{`"a"`, ``},
		{`null`, ``},
		{`{}`, ``},
	} {
		w := Walker{B: []byte(tc.in)}
		var got []string
		w.Object(keys, func(i int) { got = append(got, keys[i]+"="+string(w.Value())) })
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, g, tc.want)
		}
		if w.WS(); w.I != len(w.B) {
			t.Errorf("%s: the walk ended at %d, not after the value", tc.in, w.I)
		}
	}
}

// Skip and Value pass exactly one value, strings with escaped quotes
// and brackets in them included.
func TestValueIsOneValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{` "a\"]}" , 1`, `"a\"]}"`},
		{`"a\\" , 1`, `"a\\"`},
		{`[1,"]",{"x":"}"}] 2`, `[1,"]",{"x":"}"}]`},
		{`-1.5e3,`, `-1.5e3`},
		{`true}`, `true`},
		{`null]`, `null`},
		{``, ``},
	} {
		w := Walker{B: []byte(tc.in)}
		if got := string(w.Value()); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Array calls f at each element with its index; false for a value that
// is not an array (passed over); an f that returns false ends it.
func TestArrayReadsEachElement(t *testing.T) {
	for _, tc := range []struct {
		in      string
		stopAt  int // the index at which f returns false; -1 never
		want    string
		isArray bool
	}{
		{`[1, "x", {"a":[2]}, null]`, -1, `0:1 1:"x" 2:{"a":[2]} 3:null`, true},
		{`[]`, -1, ``, true},
		{` [ 1 ] `, -1, `0:1`, true},
		{`[1,2,3]`, 1, `0:1`, true},
		{`{"a":[1]}`, -1, ``, false},
		{`"[1]"`, -1, ``, false},
		{`null`, -1, ``, false},
	} {
		w := Walker{B: []byte(tc.in)}
		var got []string
		isArray := w.Array(func(n int) bool {
			if n == tc.stopAt {
				return false
			}
			got = append(got, fmt.Sprintf("%d:%s", n, w.Value()))
			return true
		})
		if g := strings.Join(got, " "); g != tc.want || isArray != tc.isArray {
			t.Errorf("%s: %s (%v), want %s (%v)", tc.in, g, isArray, tc.want, tc.isArray)
		}
		if w.WS(); tc.stopAt < 0 && w.I != len(w.B) {
			t.Errorf("%s: the walk ended at %d, not after the value", tc.in, w.I)
		}
	}
}

// Of bytes that are not JSON the walk reads something and ends, never
// past them nor forever.
func FuzzTheWalkEndsOnAnyBytes(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"\""}]}`, `{"a"`, `[}`, `{"a":}`, `"\`, `{,}`, `[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w := Walker{B: b}
		w.Object([]string{"a", "b"}, func(int) {
			w.Array(func(int) bool {
				start := w.I
				w.Skip()
				return w.I != start
			})
		})
		if w.I > len(b) {
			t.Fatalf("%q: the walk went to %d", b, w.I)
		}
	})
}
