package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// callResult is out as the host gets it: its text, its images, and on a
// success its structured content, when that is a JSON object that fits
// the round bound with the text (docs/mcp.md, "What a host gets").
//
// A tool with an outputSchema promises structured content that matches
// it with every success, and hosts hold it to that (the Node SDK's client
// fails the call otherwise, and the model sees nothing). A success that
// cannot keep the promise — its structured content left out, missing,
// not an object, or not matching the schema — is given as an error
// result whose text ends with a line saying why: the host's model reads
// the result's text, and no host refuses it.
func (s *Server) callResult(t *tool.Tool, out result.Output) *sdk.CallToolResult {
	text := out.Text
	r := &sdk.CallToolResult{IsError: out.IsError}
	promised := t != nil && objectSchema(t.OutputSchema)
	if !out.IsError {
		var why string
		switch n, bound := utf8.RuneCount(out.Structured), s.cfg.Env.Limits.RoundBound(); {
		case out.Structured == nil:
			why = "it gave no structured content"
		case !jsonObject(out.Structured):
			// MCP's structuredContent is an object; the text holds the
			// value when the tool gave no text of its own (contract §4)
			why = "its structured content is not a JSON object"
		case utf8.RuneCountInString(out.Text)+n > bound:
			// Output.Structured is kept whole, past the caps: it goes
			// only within the round bound
			text += fmt.Sprintf("\n[myelin: the structured content of this result (%d characters) is left out: with the text it would be over the %d characters one result may take]", n, bound)
			why = "its structured content was left out"
		default:
			if promised {
				if err := s.schemas.check(t, out.Structured); err != nil {
					why = fmt.Sprintf("its structured content does not match the schema: %v", err)
					break
				}
			}
			r.StructuredContent = json.RawMessage(out.Structured)
		}
		if promised && r.StructuredContent == nil {
			text += fmt.Sprintf("\n[myelin: %s declares an outputSchema, and this result cannot be given as a success that matches it: %s]", t.Name, why)
			r.IsError = true
		}
	}
	r.Content = []sdk.Content{&sdk.TextContent{Text: text}}
	for _, im := range out.Images {
		r.Content = append(r.Content, &sdk.ImageContent{MIMEType: im.MIMEType, Data: im.Data})
	}
	return r
}

// jsonObject reports whether raw is a JSON object.
func jsonObject(raw json.RawMessage) bool {
	b := bytes.TrimLeft(raw, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// schemas checks structured content against the outputSchema of its
// tool, each schema resolved once. The zero value is ready to use.
type schemas struct {
	m sync.Map // *tool.Tool → resolvedSchema
}

type resolvedSchema struct {
	r   *jsonschema.Resolved
	err error
}

// check reports how raw does not match t's outputSchema; nil when it
// does.
func (s *schemas) check(t *tool.Tool, raw json.RawMessage) error {
	v, ok := s.m.Load(t)
	if !ok {
		r, err := t.OutputSchema.Resolve(nil)
		v, _ = s.m.LoadOrStore(t, resolvedSchema{r, err})
	}
	rs := v.(resolvedSchema)
	if rs.err != nil {
		return fmt.Errorf("the tool's outputSchema is invalid: %w", rs.err)
	}
	var value any
	if err := json.Unmarshal(raw, &value); err != nil {
		return err
	}
	return rs.r.Validate(value)
}
