package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// A host lists each tool with a title from its summary, its input
// schema, its outputSchema when it is an object's, and annotations from
// what the tool says of itself: ReadOnly is readOnlyHint (and
// destructiveHint false), Destructive is destructiveHint, Rerun is
// idempotentHint; a tool that changes something and says nothing more
// leaves destructiveHint out (true).
func TestAHostSeesEachToolWithItsTitleSchemasAndAnnotations(t *testing.T) {
	read := rawTool("notes--read", result.Result{})
	read.Description = "Read the notes.\nMore words."
	read.ReadOnly, read.Rerun = true, true
	read.OutputSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"n": {Type: "integer"}}}
	del := rawTool("notes--delete", result.Result{})
	del.Description = "Delete a note."
	del.Destructive = true
	write := rawTool("notes--write", result.Result{})
	write.Description = "Write a note."
	write.InputSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"text": {Type: "string"}}}
	write.OutputSchema = &jsonschema.Schema{Type: "array"}
	s := New(Config{Tools: registry(t, read, del, write)})
	cs := connect(t, s, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		got[tl.Name] = tl
	}
	r, d, w := got["notes--read"], got["notes--delete"], got["notes--write"]
	if r == nil || d == nil || w == nil {
		t.Fatalf("listed %v, want the three tools", res.Tools)
	}
	if r.Title != "Read the notes" || r.Annotations == nil || r.Annotations.Title != "Read the notes" {
		t.Errorf("notes--read's title is %q (annotations %+v), want its summary without the period", r.Title, r.Annotations)
	}
	if a := r.Annotations; !a.ReadOnlyHint || !a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint {
		t.Errorf("notes--read (ReadOnly, Rerun) has annotations %+v, want readOnlyHint, idempotentHint, destructiveHint false", a)
	}
	if a := d.Annotations; a.ReadOnlyHint || a.IdempotentHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("notes--delete (Destructive) has annotations %+v, want destructiveHint true only", a)
	}
	if a := w.Annotations; a.ReadOnlyHint || a.IdempotentHint || a.DestructiveHint != nil || a.OpenWorldHint != nil {
		t.Errorf("notes--write (neither) has annotations %+v, want destructiveHint and openWorldHint left out (true)", a)
	}
	if out, _ := json.Marshal(r.OutputSchema); !strings.Contains(string(out), `"n":{"type":"integer"}`) {
		t.Errorf("notes--read's outputSchema is %s, want the tool's", out)
	}
	if w.OutputSchema != nil {
		t.Errorf("notes--write's outputSchema is %v, want none: a schema not of an object is left out", w.OutputSchema)
	}
	if in, _ := json.Marshal(w.InputSchema); !strings.Contains(string(in), `"text":{"type":"string"}`) {
		t.Errorf("notes--write's inputSchema is %s, want the tool's", in)
	}
	if in, _ := json.Marshal(d.InputSchema); string(in) != `{"type":"object"}` {
		t.Errorf("notes--delete's inputSchema is %s, want {\"type\":\"object\"} for a tool without one", in)
	}
}

// A call's result is the one conversion's output, exactly: its text, its
// images as image content (their placeholders in the text), and its
// structured content.
func TestACallGivesTheConvertedTextImagesAndStructuredContent(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	r := result.Result{Data: []result.Block{result.TextBlock{Text: "two lines\nof text"}, result.ImageBlock{MIMEType: "image/png", Data: png}},
		Structured: map[string]any{"b": 2, "a": []int{1}}}
	ws := openWorkspace(t)
	env := result.Env{Store: ws}
	s := New(Config{Tools: registry(t, rawTool("shapes", r)), Env: env})
	cs := connect(t, s, nil)
	got := call(t, cs, "shapes", nil)
	want := result.One(result.Call{ID: "x", Result: r}, env)
	if got.IsError {
		t.Fatalf("the call failed: %s", textOf(got))
	}
	if len(got.Content) != 2 {
		t.Fatalf("the result has %d blocks, want the text and the image: %v", len(got.Content), got.Content)
	}
	if tc, ok := got.Content[0].(*sdk.TextContent); !ok || tc.Text != want.Text {
		t.Errorf("the text is %v, want the conversion's %q", got.Content[0], want.Text)
	}
	if im, ok := got.Content[1].(*sdk.ImageContent); !ok || im.MIMEType != "image/png" || !bytes.Equal(im.Data, png) {
		t.Errorf("the second block is %v, want the image", got.Content[1])
	}
	if b, _ := json.Marshal(got.StructuredContent); string(b) != string(want.Structured) {
		t.Errorf("structuredContent is %s, want %s", b, want.Structured)
	}
}

// A result over the cap reaches the host as it reaches the model: the
// head and the notice naming the spill file and the workspace--read call
// that pages it; its small structured content comes with it.
func TestASpilledResultGivesTheHeadAndTheNoticeWithItsStructuredContent(t *testing.T) {
	ws := openWorkspace(t)
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "line %d of the output\n", i)
	}
	big := b.String()
	tl := rawTool("big", result.Result{Data: big, Structured: map[string]any{"lines": 3000}})
	tl.OutputSchema = &jsonschema.Schema{Type: "object"}
	s := New(Config{Tools: registry(t, tl), Env: result.Env{Store: ws, Limits: result.Limits{Agent: 2000}}})
	cs := connect(t, s, nil)
	got := call(t, cs, "big", nil)
	text := textOf(got)
	if got.IsError || !strings.HasPrefix(text, "line 0 of the output\n") || len(text) > 3000 {
		t.Fatalf("the host got %d characters (error %v) starting %.60q, want the head of the output", len(text), got.IsError, text)
	}
	m := regexp.MustCompile(`\.myelin/tool-results/[A-Za-z0-9._-]+\.txt`).FindString(text)
	if m == "" || !strings.Contains(text, "workspace--read") {
		t.Fatalf("the text does not name the spill file and workspace--read: %q", text[len(text)-400:])
	}
	whole, err := os.ReadFile(filepath.Join(ws.Dir(), m))
	if err != nil || string(whole) != big {
		t.Errorf("the spill file %s holds %d bytes (%v), want the whole output", m, len(whole), err)
	}
	if b, _ := json.Marshal(got.StructuredContent); string(b) != `{"lines":3000}` {
		t.Errorf("structuredContent is %s, want the result's", b)
	}
}

// Structured content bigger than one result may take (the round bound
// with the text) does not reach the host whole, past the caps: it is
// left out, and the text says so. For a tool with an outputSchema, whose
// successes must carry structured content, the result is an error.
func TestStructuredContentOverTheRoundBoundIsLeftOut(t *testing.T) {
	ws := openWorkspace(t)
	rows := make([]string, 3000)
	for i := range rows {
		rows[i] = fmt.Sprintf("row %d", i)
	}
	r := result.Result{Data: "a short summary", Structured: map[string]any{"rows": rows}}
	plain := rawTool("plain", r)
	schema := rawTool("schema", r)
	schema.OutputSchema = &jsonschema.Schema{Type: "object"}
	s := New(Config{Tools: registry(t, plain, schema), Env: result.Env{Store: ws, Limits: result.Limits{Agent: 1000}}})
	cs := connect(t, s, nil)
	for _, c := range []struct {
		name    string
		isError bool
	}{{"plain", false}, {"schema", true}} {
		got := call(t, cs, c.name, nil)
		if got.StructuredContent != nil {
			t.Errorf("%s: structuredContent of %d rows reached the host, over the bound", c.name, len(rows))
		}
		if text := textOf(got); !strings.HasPrefix(text, "a short summary") || !strings.Contains(text, "structured content of this result") {
			t.Errorf("%s: the text is %q, want the result's and a notice of what was left out", c.name, text)
		}
		if got.IsError != c.isError {
			t.Errorf("%s: isError is %v, want %v", c.name, got.IsError, c.isError)
		}
	}
}

// An error result carries its text and no structured content (a host
// checks whatever structured content it gets against the outputSchema,
// which describes successes); structured content that is not an object
// is not sent either (MCP's is an object), and the text holds it.
func TestAnErrorOrANonObjectGivesNoStructuredContent(t *testing.T) {
	failed := rawTool("failed", result.Result{Data: "it broke", IsError: true, Structured: map[string]any{"code": 3}})
	list := rawTool("list", result.Result{Structured: []int{1, 2}})
	s := New(Config{Tools: registry(t, failed, list)})
	cs := connect(t, s, nil)
	got := call(t, cs, "failed", nil)
	if !got.IsError || textOf(got) != "it broke" || got.StructuredContent != nil {
		t.Errorf("the error result is %q (error %v, structured %v), want its text flagged and no structured content", textOf(got), got.IsError, got.StructuredContent)
	}
	got = call(t, cs, "list", nil)
	if got.IsError || textOf(got) != "[1,2]" || got.StructuredContent != nil {
		t.Errorf("the array result is %q (error %v, structured %v), want its JSON as text and no structured content", textOf(got), got.IsError, got.StructuredContent)
	}
}

// The calls a host's call makes (a script's, a subagent's: through a
// dispatcher of their own under the call's context) are checked by the
// server's Gate too (SPEC §14), not only the host's call itself.
func TestTheCallsAHostsCallMakesAreCheckedByTheGate(t *testing.T) {
	ran := false
	secret := tool.MustFunc("test--secret", "Does what must be allowed.", func(context.Context, struct{}) (any, error) { ran = true; return "done", nil })
	var inner *tool.Registry
	runner := tool.MustFunc("test--runner", "Runs test--secret, as a script would.", func(ctx context.Context, _ struct{}) (any, error) {
		d := tool.Dispatcher{Tools: inner}
		return d.Call(ctx, tool.Call{ID: "inner", Name: "test--secret"}).Text, nil
	})
	inner = registry(t, secret)
	rules := []permission.Rule{mustRule(t, "test--runner", permission.Allow), mustRule(t, "test--secret", permission.Deny)}
	gate := &approval.Gate{Policy: &permission.Policy{User: rules}}
	s := New(Config{Tools: registry(t, runner), Gate: gate})
	cs := connect(t, s, nil)
	got := call(t, cs, "test--runner", nil)
	if ran || !strings.Contains(textOf(got), "denied") {
		t.Errorf("the inner call ran (%v) and the runner got %q, want it denied by the gate", ran, textOf(got))
	}
}

// mustRule is a rule of source --allow or --deny.
func mustRule(t *testing.T, text string, d permission.Decision) permission.Rule {
	t.Helper()
	r, err := permission.ParseRule(text, d, "--"+d.String())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A tool with an outputSchema promises structured content that matches
// it with every success, and hosts hold it to that: a success that breaks
// the promise (no structured content, or content that does not match)
// reaches the host as an error result saying why, not as a success the
// host would refuse; one that keeps it is a success.
func TestASuccessThatBreaksItsOutputSchemaIsAnErrorSayingWhy(t *testing.T) {
	schema := &jsonschema.Schema{Type: "object", Required: []string{"count"}, Properties: map[string]*jsonschema.Schema{"count": {Type: "integer"}}}
	mk := func(name string, r result.Result) *tool.Tool {
		tl := rawTool(name, r)
		tl.OutputSchema = schema
		return tl
	}
	s := New(Config{Tools: registry(t,
		mk("test--none", result.Result{Data: "no structure"}),
		mk("test--wrong", result.Result{Data: "wrong structure", Structured: map[string]any{"count": "three"}}),
		mk("test--right", result.Result{Data: "right structure", Structured: map[string]any{"count": 3}}),
	)})
	cs := connect(t, s, nil)
	for _, c := range []struct{ name, text, why string }{
		{"test--none", "no structure", "it gave no structured content"},
		{"test--wrong", "wrong structure", "does not match the schema"},
	} {
		got := call(t, cs, c.name, nil)
		if text := textOf(got); !got.IsError || got.StructuredContent != nil || !strings.HasPrefix(text, c.text+"\n[myelin: "+c.name+" declares an outputSchema") || !strings.Contains(text, c.why) {
			t.Errorf("%s gave %q (error %v, structured %v), want an error result saying %q", c.name, text, got.IsError, got.StructuredContent, c.why)
		}
	}
	if got := call(t, cs, "test--right", nil); got.IsError || textOf(got) != "right structure" || got.StructuredContent == nil {
		t.Errorf("test--right gave %q (error %v, structured %v), want a success with its structured content", textOf(got), got.IsError, got.StructuredContent)
	}
}
