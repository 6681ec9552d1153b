package workspace

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/tool"
)

// The output schemas of the workspace tools (tool.Tool.OutputSchema): what
// an MCP host is told each tool's structured content holds, and checks
// every result against (`myelin mcp serve`). Each is inferred from the Go
// type the handler returns — ReadPage, GrepReport, ListReport, GlobReport,
// WriteReport, EditReport —, so a field added there is in the schema too;
// then narrowed where the handler promises more than the type says (a
// list that is never null, a word from a fixed set). A schema must admit
// every structured result its handler gives on success:
// TestEveryStructuredResultFitsItsToolsOutputSchema runs the tools on the
// edge cases and checks each result against it.

func readSchema() *jsonschema.Schema {
	s := inferSchema[ReadPage]()
	s.Properties["mode"].Enum = []any{"lines", "chars"}
	return s
}

func grepSchema() *jsonschema.Schema {
	s := inferSchema[GrepReport]()
	neverNull(s, "matches")
	return s
}

func listSchema() *jsonschema.Schema {
	s := inferSchema[ListReport]()
	neverNull(s, "entries")
	s.Properties["entries"].Items.Properties["type"].Enum = []any{"file", "dir", "link", "other"}
	return s
}

func globSchema() *jsonschema.Schema {
	s := inferSchema[GlobReport]()
	neverNull(s, "paths")
	return s
}

func writeSchema() *jsonschema.Schema { return inferSchema[WriteReport]() }

func editSchema() *jsonschema.Schema { return inferSchema[EditReport]() }

// inferSchema is T's JSON Schema: an object with T's fields, those without
// omitempty required, no others allowed. It uses no keyword of one JSON
// Schema draft only, so that hosts checking with draft 7 (the Node SDK's
// Ajv) and with 2020-12 (the Go SDK's jsonschema-go) read it alike.
func inferSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("workspace: the output schema of %T: %v", *new(T), err)) // the types are this package's own
	}
	return s
}

// neverNull narrows the property name of s, a list or an object that the
// handler always gives (an empty list, never null), to its one type.
func neverNull(s *jsonschema.Schema, name string) {
	p := s.Properties[name]
	for _, t := range p.Types {
		if t != "null" {
			p.Type, p.Types = t, nil
			return
		}
	}
}

// withOutput is t with the output schema s.
func withOutput(s *jsonschema.Schema, t *tool.Tool) *tool.Tool {
	t.OutputSchema = s
	return t
}
