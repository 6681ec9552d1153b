package workspace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/result"
)

// schemaCase is one real call of a workspace tool.
type schemaCase struct {
	name  string
	tool  string
	input map[string]any
	cap   int  // the call's cap; 0 for the default
	fails bool // the call is an error result, which gives no structured content
	// check, when set, says what else the result must hold, so that the
	// case is known to reach the shape it is named after.
	check func(out result.Output) error
}

// An MCP host is told each workspace tool's output schema and checks
// every structured result against it (the Node SDK's client refuses a
// result that does not fit, or a success without structured content): a
// schema that leaves out a shape the handler gives breaks the host. So
// every tool runs here on its edge cases — empty, binary, spilled, paged,
// offsets, special files —, and each success must give structured content
// that its tool's OutputSchema admits, each error none.
func TestEveryStructuredResultFitsItsToolsOutputSchema(t *testing.T) {
	f := newFixture(t)
	specialFiles(t, f.dir)
	f.write(t, "small.txt", "alpha\nbeta\ngamma\n")
	f.write(t, "empty.txt", "")
	f.write(t, "crlf.txt", "one\r\ntwo\r\n")
	f.write(t, "long.txt", strings.Repeat("x", 5000)+"\nend\n")
	f.write(t, "huge-line.txt", strings.Repeat("y", 1<<20+10)+"\nneedle after\n")
	f.write(t, "bin.dat", "\x00\x01\x02PNG\x00needle")
	f.write(t, "sub/deep/a.go", "package a // needle\n")
	f.write(t, ".myelin/notes.txt", "needle in myelin's own files\n")
	if err := os.Mkdir(filepath.Join(f.dir, "void"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxListed + 1 { // more than list and glob show, with names long enough to spill a list
		f.write(t, fmt.Sprintf("many/%s-%04d.txt", strings.Repeat("n", 40), i), "needle\n")
	}
	spilled := func(out result.Output) error {
		if out.SpillPath == "" {
			return fmt.Errorf("the text was not spilled (%d characters)", len(out.Text))
		}
		return nil
	}
	has := func(field string) func(result.Output) error {
		return func(out result.Output) error {
			if !strings.Contains(string(out.Structured), `"`+field+`":`) {
				return fmt.Errorf("the structured content has no %s", field)
			}
			return nil
		}
	}
	cases := []schemaCase{
		{name: "by line", tool: "workspace--read", input: map[string]any{"path": "small.txt"}},
		{name: "by line, a next page", tool: "workspace--read", input: map[string]any{"path": "small.txt", "offset": 2, "limit": 1},
			check: func(out result.Output) error { return nonNullNext(out) }},
		{name: "empty file", tool: "workspace--read", input: map[string]any{"path": "empty.txt"}},
		{name: "CRLF", tool: "workspace--read", input: map[string]any{"path": "crlf.txt"}},
		{name: "by character", tool: "workspace--read", input: map[string]any{"path": "small.txt", "offsetChars": 3, "limitChars": 4},
			check: func(out result.Output) error { return nonNullNext(out) }},
		{name: "by character to the end", tool: "workspace--read", input: map[string]any{"path": "small.txt", "offsetChars": 10}},
		{name: "a line longer than a page", tool: "workspace--read", input: map[string]any{"path": "long.txt"}, cap: 1000,
			check: func(out result.Output) error { return nonNullNext(out) }},
		{name: "a directory", tool: "workspace--read", input: map[string]any{"path": "many"}, fails: true},
		{name: "binary", tool: "workspace--read", input: map[string]any{"path": "bin.dat"}, fails: true},
		{name: "past the end", tool: "workspace--read", input: map[string]any{"path": "small.txt", "offset": 9}, fails: true},

		{name: "matches", tool: "workspace--grep", input: map[string]any{"pattern": "needle", "path": "sub"}},
		{name: "no match", tool: "workspace--grep", input: map[string]any{"pattern": "absent", "path": "small.txt"}},
		{name: "passed over, not searched, next", tool: "workspace--grep", input: map[string]any{"pattern": "needle", "limit": 2},
			check: func(out result.Output) error {
				for _, f := range []string{"passedOver", "notSearched"} {
					if err := has(f)(out); err != nil {
						return err
					}
				}
				return nonNullNext(out)
			}},
		{name: "context and skip", tool: "workspace--grep", input: map[string]any{"pattern": "beta", "path": "small.txt", "context": 1, "skip": 0}},
		{name: "a line over 1 MiB", tool: "workspace--grep", input: map[string]any{"pattern": "needle", "path": "huge-line.txt"}, check: has("longLineAt")},
		{name: "into .myelin", tool: "workspace--grep", input: map[string]any{"pattern": "needle", "path": ".myelin"}},
		{name: "bad pattern", tool: "workspace--grep", input: map[string]any{"pattern": "("}, fails: true},

		{name: "root with special files", tool: "workspace--list", input: map[string]any{}, check: has("kind")},
		{name: "empty directory", tool: "workspace--list", input: map[string]any{"path": "void"}},
		{name: "spilled, more than shown", tool: "workspace--list", input: map[string]any{"path": "many"}, cap: 1000, check: spilled},
		{name: "a file", tool: "workspace--list", input: map[string]any{"path": "small.txt"}, fails: true},

		{name: "matches", tool: "workspace--glob", input: map[string]any{"pattern": "**/*.go"}},
		{name: "no match under a missing directory", tool: "workspace--glob", input: map[string]any{"pattern": "nowhere/*.go"}},
		{name: "no match", tool: "workspace--glob", input: map[string]any{"pattern": "*.rs"}},
		{name: "more than shown, spilled", tool: "workspace--glob", input: map[string]any{"pattern": "many/*"}, cap: 1000, check: spilled},
		{name: "empty pattern", tool: "workspace--glob", input: map[string]any{"pattern": ""}, fails: true},

		{name: "created", tool: "workspace--write", input: map[string]any{"path": "new/w.txt", "content": "é\n"}},
		{name: "replaced, empty", tool: "workspace--write", input: map[string]any{"path": "new/w.txt", "content": ""}},
		{name: "a directory", tool: "workspace--write", input: map[string]any{"path": "void", "content": "x"}, fails: true},

		{name: "one", tool: "workspace--edit", input: map[string]any{"path": "small.txt", "old_string": "beta", "new_string": "BETA"}},
		{name: "replace_all", tool: "workspace--edit", input: map[string]any{"path": "crlf.txt", "old_string": "\r\n", "new_string": "\n", "replace_all": true}},
		{name: "not found", tool: "workspace--edit", input: map[string]any{"path": "small.txt", "old_string": "zeta", "new_string": "z"}, fails: true},
	}
	schemas := f.outputSchemas(t)
	tried := map[string]bool{}
	for _, c := range cases {
		t.Run(c.tool+"/"+c.name, func(t *testing.T) {
			tried[c.tool] = true
			out := f.callCap(t, c.tool, c.input, c.cap)
			if c.fails {
				if !out.IsError || out.Structured != nil {
					t.Fatalf("want an error result without structured content, got error %v, structured %s: %.300s", out.IsError, out.Structured, out.Text)
				}
				return
			}
			if out.IsError {
				t.Fatalf("the call failed: %.300s", out.Text)
			}
			if out.Structured == nil {
				t.Fatalf("a success gave no structured content, which a host told of an output schema refuses: %.300s", out.Text)
			}
			var v any
			if err := json.Unmarshal(out.Structured, &v); err != nil {
				t.Fatalf("the structured content is not JSON: %v", err)
			}
			schema, ok := schemas[c.tool]
			if !ok {
				t.Fatalf("%s has no output schema to check its structured content against", c.tool)
			}
			if err := schema.Validate(v); err != nil {
				t.Fatalf("the structured content does not fit %s's output schema: %v\n%.1000s", c.tool, err, out.Structured)
			}
			if c.check != nil {
				if err := c.check(out); err != nil {
					t.Fatalf("the case does not reach its shape: %v\n%.1000s", err, out.Structured)
				}
			}
		})
	}
	for _, tl := range f.ws.Tools() {
		if !tried[tl.Name] {
			t.Errorf("%s has no case here", tl.Name)
		}
	}
}

// nonNullNext says whether out's structured content names a next call.
func nonNullNext(out result.Output) error {
	var v struct {
		Next json.RawMessage `json:"next"`
	}
	if err := json.Unmarshal(out.Structured, &v); err != nil || len(v.Next) == 0 || string(v.Next) == "null" {
		return fmt.Errorf("no next call")
	}
	return nil
}

// outputSchemas are the resolved output schemas of f's tools, which every
// workspace tool has: an object (MCP's outputSchema is one) that
// requires something, not a schema that admits anything.
func (f *fixture) outputSchemas(t *testing.T) map[string]*jsonschema.Resolved {
	t.Helper()
	out := map[string]*jsonschema.Resolved{}
	for _, tl := range f.ws.Tools() {
		s := tl.OutputSchema
		if s == nil {
			t.Errorf("%s gives structured content and has no output schema", tl.Name)
			continue
		}
		if s.Type != "object" {
			t.Errorf("%s's output schema is of type %q, and MCP's outputSchema must be an object", tl.Name, s.Type)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s's output schema does not resolve: %v", tl.Name, err)
		}
		if r.Validate(map[string]any{}) == nil {
			t.Errorf("%s's output schema admits {}: it describes nothing", tl.Name)
		}
		if r.Validate(map[string]any{"unknown": 1}) == nil {
			t.Errorf("%s's output schema admits a field its result never has", tl.Name)
		}
		out[tl.Name] = r
	}
	return out
}
