package tool

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

// The input types Func's decoding is held to encoding/json's with: a
// struct with no fields, one with a field, ones that decode themselves
// (from JSON, from text, through an embedded field), a map and a pointer.
type (
	noFields     struct{}
	oneField     struct{ N int }
	selfDecoding struct{ Called bool }
	textDecoding struct{ Text string }
	embedsSelf   struct{ selfDecoding }
)

func (s *selfDecoding) UnmarshalJSON([]byte) error { s.Called = true; return nil }
func (s *textDecoding) UnmarshalText(b []byte) error {
	s.Text = string(b)
	return nil
}

// funcInputs are the inputs of the table and the fuzz target's seeds.
var funcInputs = []string{`{}`, " { \n\t} ", `{"N":1}`, `{"n":2}`, `[]`, `null`, `{`, ``, `{}x`, `"{}"`}

// decodes reports whether a tool made by Func with input type In hands
// its function what json.Unmarshal decodes from input (or fails where it
// fails), and what each gave.
func decodes[In any](t *testing.T, input string) (ok bool, got, want any) {
	t.Helper()
	var seen In
	called := false
	tl, err := Func("decode", "Decodes.", func(ctx context.Context, in In) (any, error) {
		seen, called = in, true
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := tl.Handler(context.Background(), json.RawMessage(input))
	var in In
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return r.IsError && !called, r.Data, err
	}
	return called && !r.IsError && reflect.DeepEqual(seen, in), seen, in
}

// Func decodes a call's input as encoding/json does, for every type: the
// empty object it does not decode into a struct that has no decoding
// methods is that struct's zero value, as encoding/json leaves it.
func TestFuncDecodesWhatEncodingJSONDecodes(t *testing.T) {
	for _, input := range funcInputs {
		for name, check := range map[string]func(*testing.T, string) (bool, any, any){
			"no fields":     decodes[noFields],
			"one field":     decodes[oneField],
			"self decoding": decodes[selfDecoding],
			"text decoding": decodes[textDecoding],
			"embeds self":   decodes[embedsSelf],
			"map":           decodes[map[string]int],
			"pointer":       decodes[*oneField],
		} {
			if ok, got, want := check(t, input); !ok {
				t.Errorf("%s, input %q: got %#v, encoding/json %#v", name, input, got, want)
			}
		}
	}
}

// Which types Func leaves undecoded for an empty object.
func TestOnlyAStructWithNoDecodingMethodsIsLeftZeroForAnEmptyObject(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[noFields](), true},
		{reflect.TypeFor[oneField](), true},
		{reflect.TypeFor[selfDecoding](), false},
		{reflect.TypeFor[textDecoding](), false},
		{reflect.TypeFor[embedsSelf](), false},
		{reflect.TypeFor[map[string]int](), false},
		{reflect.TypeFor[*oneField](), false},
		{reflect.TypeFor[any](), false},
	} {
		if got := emptyIsZero(tc.typ); got != tc.want {
			t.Errorf("%v: got %v, want %v", tc.typ, got, tc.want)
		}
	}
	for input, want := range map[string]bool{`{}`: true, " {\r\n\t } ": true, `{"a":1}`: false, `{`: false, `}`: false, `{}{}`: false, ``: false, `[]`: false, `{ x}`: false} {
		if got := emptyObject([]byte(input)); got != want {
			t.Errorf("emptyObject(%q) = %v, want %v", input, got, want)
		}
	}
}

// FuzzFuncDecodesWhatEncodingJSONDecodes holds Func's decoding to
// encoding/json's on any input.
func FuzzFuncDecodesWhatEncodingJSONDecodes(f *testing.F) {
	for _, input := range funcInputs {
		f.Add(input)
	}
	f.Fuzz(func(t *testing.T, input string) {
		for name, check := range map[string]func(*testing.T, string) (bool, any, any){
			"no fields":     decodes[noFields],
			"one field":     decodes[oneField],
			"self decoding": decodes[selfDecoding],
			"map":           decodes[map[string]int],
		} {
			if ok, got, want := check(t, input); !ok {
				t.Errorf("%s, input %q: got %#v, encoding/json %#v", name, input, got, want)
			}
		}
	})
}
