package mcp

import (
	"encoding/json"
	"testing"
)

// A server's tool with an output schema becomes a tool.Tool with that
// schema (myelin mcp serve offers it on, and a host checks the tool's
// structured content against it); a tool without one gets none. The
// structured content a call gives fits the schema carried.
func TestAServersOutputSchemaBecomesTheToolsOutputSchema(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	var withSchema, without bool
	for _, tl := range h.set.Tools() {
		switch tl.Name {
		case "t--structured":
			withSchema = true
			s := tl.OutputSchema
			if s == nil {
				t.Fatal("t--structured has no output schema; its server lists one")
			}
			if s.Type != "object" || s.Properties["count"] == nil || s.Properties["count"].Type != "integer" || len(s.Required) != 1 || s.Required[0] != "count" {
				t.Fatalf("t--structured's output schema is not the server's: %+v", s)
			}
			r, err := s.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			out := h.call("t--structured", `{}`)
			var v any
			if err := json.Unmarshal(out.Structured, &v); err != nil {
				t.Fatalf("structured %s: %v", out.Structured, err)
			}
			if err := r.Validate(v); err != nil {
				t.Errorf("the call's structured content %s does not fit the schema carried: %v", out.Structured, err)
			}
			if r.Validate(map[string]any{"count": "two"}) == nil {
				t.Error("the schema carried admits a count that is not an integer")
			}
		case "t--structured_text", "t--echo":
			without = true
			if tl.OutputSchema != nil {
				t.Errorf("%s has an output schema; its server lists none", tl.Name)
			}
		}
	}
	if !withSchema || !without {
		t.Fatalf("the test server's tools were not all listed: with a schema %v, without %v", withSchema, without)
	}
}

// An output schema myelin cannot read, or that is not an object's (which
// MCP does not allow, and a host such as the Node SDK's client refuses
// with the whole tool list), is left out rather than passed on.
func TestAnOutputSchemaThatIsNotAnObjectsIsLeftOut(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema any
		kept   bool
	}{
		{"an object's", map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number"}}}, true},
		{"none", nil, false},
		{"an array's", map[string]any{"type": "array"}, false},
		{"an object's or null", map[string]any{"type": []any{"object", "null"}}, false},
		{"no type", map[string]any{"properties": map[string]any{}}, false},
		{"not a schema", "a string", false},
		{"a reference that does not resolve", map[string]any{"type": "object", "$ref": "#/$defs/missing"}, false},
	} {
		if got := outputSchema(c.schema); (got != nil) != c.kept {
			t.Errorf("%s: kept %v, want %v", c.name, got != nil, c.kept)
		}
	}
}
