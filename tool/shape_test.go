package tool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type shapeInput struct {
	Path  string            `json:"path"`
	Line  *int              `json:"line,omitempty"`
	Tags  []string          `json:"tags,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	Ratio float64           `json:"ratio,omitempty"`
	Force bool              `json:"force,omitempty"`
	Range struct {
		From int `json:"from"`
	} `json:"range,omitempty"`
	Any any `json:"any,omitempty"`
}

func schemaFor[T any](t *testing.T) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The check on the input's bytes (shape) never accepts what the general
// validator rejects, and accepts the common valid inputs of Func's
// schemas, so that they are not decoded for validation. Inputs it does
// not accept go to the general validator, whose error the model reads.
func TestTheInputCheckOnBytesAcceptsOnlyWhatTheValidatorAccepts(t *testing.T) {
	withKeyword := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"s": {Type: "string", MinLength: jsonschema.Ptr(3)}}}
	for _, tc := range []struct {
		name   string
		schema *jsonschema.Schema
		input  string
		fast   bool // accepted on its bytes
	}{
		{"no fields, empty object", schemaFor[struct{}](t), `{}`, true},
		{"no fields, a field", schemaFor[struct{}](t), `{"a":1}`, false},
		{"no fields, an array", schemaFor[struct{}](t), `[]`, false},
		{"no fields, null", schemaFor[struct{}](t), `null`, false},
		{"required string", schemaFor[shapeInput](t), `{"path":"a.go"}`, true},
		{"required left out", schemaFor[shapeInput](t), `{"line":3}`, false},
		{"wrong type", schemaFor[shapeInput](t), `{"path":3}`, false},
		{"every field", schemaFor[shapeInput](t), ` { "path" : "a\"b.go", "line": 3, "tags": ["x", "y"], "env": {"K": "v"}, "ratio": 0.5, "force": true, "range": {"from": -2}, "any": [1, {"z": null}] } `, true},
		{"a pointer field null", schemaFor[shapeInput](t), `{"path":"a","line":null}`, true},
		{"an integer with a fraction", schemaFor[shapeInput](t), `{"path":"a","line":2.5}`, false},
		{"an integer written 1.0", schemaFor[shapeInput](t), `{"path":"a","line":1.0}`, false},
		{"an integer with an exponent", schemaFor[shapeInput](t), `{"path":"a","line":1e2}`, false},
		{"a number too long for float64's integers", schemaFor[shapeInput](t), `{"path":"a","line":123456789012345678901234}`, false},
		{"a number out of float64's range", schemaFor[shapeInput](t), `{"path":"a","ratio":1e999}`, false},
		{"a number as an integer", schemaFor[shapeInput](t), `{"path":"a","ratio":7}`, true},
		{"an unknown field", schemaFor[shapeInput](t), `{"path":"a","nope":1}`, false},
		{"an item of the wrong type", schemaFor[shapeInput](t), `{"path":"a","tags":["x",1]}`, false},
		{"a map value of the wrong type", schemaFor[shapeInput](t), `{"path":"a","env":{"K":1}}`, false},
		{"a nested required field left out", schemaFor[shapeInput](t), `{"path":"a","range":{}}`, false},
		{"a nested unknown field", schemaFor[shapeInput](t), `{"path":"a","range":{"from":1,"to":2}}`, false},
		{"an escaped key", schemaFor[shapeInput](t), `{"pat\u0068":"a"}`, false},
		{"a key twice, the first wrong", schemaFor[shapeInput](t), `{"path":1,"path":"a"}`, false},
		{"a key twice, the last wrong", schemaFor[shapeInput](t), `{"path":"a","path":1}`, false},
		{"not JSON", schemaFor[shapeInput](t), `{"path":`, false},
		{"two values", schemaFor[shapeInput](t), `{"path":"a"} {}`, false},
		{"a keyword the check does not know", withKeyword, `{"s":"abcd"}`, false},
		{"a keyword the check does not know, failed", withKeyword, `{"s":"a"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resolved, err := tc.schema.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			sh := shapeOf(tc.schema)
			fast := sh != nil && json.Valid([]byte(tc.input)) && sh.accepts([]byte(tc.input))
			var v any
			full := json.Unmarshal([]byte(tc.input), &v) == nil && resolved.Validate(v) == nil
			if fast && !full {
				t.Fatalf("%s: accepted on its bytes, rejected by the validator", tc.input)
			}
			if fast != tc.fast {
				t.Errorf("%s: accepted on its bytes %v, want %v (the validator: %v)", tc.input, fast, tc.fast, full)
			}
		})
	}
}

// A valid input of a Func tool is validated with no allocation: it is not
// decoded for validation, only by the handler.
func TestAValidInputIsCheckedWithoutDecodingIt(t *testing.T) {
	tl := MustFunc("read", "Reads.", func(context.Context, shapeInput) (any, error) { return "", nil })
	input := json.RawMessage(`{"path":"src/main.go","line":12,"tags":["a"],"range":{"from":1}}`)
	if err := tl.validate(input); err != nil {
		t.Fatal(err)
	}
	// the least of three measures: AllocsPerRun counts every allocation
	// of the process, and another goroutine of the test binary (one an
	// earlier test left to finish) may allocate during one of them
	n := testing.AllocsPerRun(100, func() { _ = tl.validate(input) })
	for range 2 {
		n = min(n, testing.AllocsPerRun(100, func() { _ = tl.validate(input) }))
	}
	if n != 0 {
		t.Fatalf("validating a valid input allocated %v times a call; want 0 (no decoding)", n)
	}
	if err := tl.validate(json.RawMessage(`{"line":1}`)); err == nil {
		t.Fatal("an input without its required field was accepted")
	}
}

// FuzzTheInputCheckOnBytes holds the check on bytes to the validator: what
// it accepts, the validator accepts. Run:
//
//	go test ./tool -run '^$' -fuzz FuzzTheInputCheckOnBytes -fuzztime 60s
func FuzzTheInputCheckOnBytes(f *testing.F) {
	for _, seed := range []string{`{}`, `{"path":"a"}`, `{"path":"a","line":3,"tags":["x"],"env":{"k":"v"},"ratio":0.5,"force":true,"range":{"from":1},"any":[null,{}]}`,
		`{"path":"a","line":1.0}`, `{"path":"a","line":1e2}`, `[]`, `null`, `{"pat\u0068":"a"}`, `{"path":"a","range":{"from":1,"x":2}}`} {
		f.Add(seed)
	}
	schema, err := jsonschema.For[shapeInput](nil)
	if err != nil {
		f.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		f.Fatal(err)
	}
	sh := shapeOf(schema)
	if sh == nil {
		f.Fatal("Func's schema is not checked on bytes")
	}
	f.Fuzz(func(t *testing.T, input string) {
		if !json.Valid([]byte(input)) || !sh.accepts([]byte(input)) {
			return
		}
		var v any
		if err := json.Unmarshal([]byte(input), &v); err != nil {
			t.Fatalf("%s: accepted on its bytes, not decodable: %v", input, err)
		}
		if err := resolved.Validate(v); err != nil {
			t.Fatalf("%s: accepted on its bytes, rejected by the validator: %v", input, err)
		}
	})
}
