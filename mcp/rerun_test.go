package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's tool may run again when its annotations say it changes
// nothing, or that a second call adds nothing and it only adds; a
// destructive tool never does on its word alone; the server's entry
// decides over the annotations either way.
func TestAToolMayRunAgainOnlyWhenItsAnnotationsOrItsEntrySaySo(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name  string
		entry *bool
		a     *sdk.ToolAnnotations
		want  bool
	}{
		{"no annotations", nil, nil, false},
		{"annotations without hints", nil, &sdk.ToolAnnotations{Title: "t"}, false},
		{"read-only", nil, &sdk.ToolAnnotations{ReadOnlyHint: true}, true},
		{"read-only, destructive said (meaningless then)", nil, &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}, true},
		{"idempotent, destructive left out (true by default)", nil, &sdk.ToolAnnotations{IdempotentHint: true}, false},
		{"idempotent and destructive", nil, &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: &yes}, false},
		{"idempotent and only additive", nil, &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: &no}, true},
		{"only additive, not idempotent", nil, &sdk.ToolAnnotations{DestructiveHint: &no}, false},
		{"open world and read-only", nil, &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &yes}, true},
		{"entry true, no annotations", &yes, nil, true},
		{"entry true over a destructive tool", &yes, &sdk.ToolAnnotations{DestructiveHint: &yes}, true},
		{"entry false over read-only", &no, &sdk.ToolAnnotations{ReadOnlyHint: true}, false},
	}
	for _, tt := range tests {
		if got := mayRerun(tt.entry, tt.a); got != tt.want {
			t.Errorf("%s: mayRerun = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The annotations a server lists its tools with reach the tools myelin
// offers, and an entry's "rerun" overrides them.
func TestListedAnnotationsDecideWhichOfferedToolsMayRunAgain(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "hints", Version: "1"}, nil)
	answer := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
	}
	schema := map[string]any{"type": "object"}
	s.AddTool(&sdk.Tool{Name: "look", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, answer)
	s.AddTool(&sdk.Tool{Name: "send", InputSchema: schema}, answer)
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close) // after the Set closes (cleanups run last first): its standalone stream is open until then
	no := false
	h := start(t, []Server{{Name: "hints", Type: "http", URL: srv.URL}, {Name: "distrusted", Type: "http", URL: srv.URL, Rerun: &no}}, Options{})
	if f := h.set.Failures(); f != nil {
		t.Fatal(f)
	}
	want := map[string]bool{"hints--look": true, "hints--send": false, "distrusted--look": false, "distrusted--send": false}
	got := map[string]bool{}
	for _, tl := range h.set.Tools() {
		got[tl.Name] = tl.Rerun
	}
	if len(got) != len(want) {
		t.Fatalf("tools offered: %v, want %v", got, want)
	}
	for name, rerun := range want {
		if got[name] != rerun {
			t.Errorf("%s: Rerun = %v, want %v", name, got[name], rerun)
		}
	}
	// readOnlyHint and destructiveHint reach the offered tools too: the
	// permission policy's default and the round's order go by them
	for _, tl := range h.set.Tools() {
		look := tl.Name == "hints--look" || tl.Name == "distrusted--look"
		if tl.ReadOnly != look || tl.Destructive == look {
			t.Errorf("%s: ReadOnly %v, Destructive %v; want %v, %v", tl.Name, tl.ReadOnly, tl.Destructive, look, !look)
		}
	}
}

// A tool is read-only when its server says readOnlyHint, and destructive
// when it is not read-only and its destructiveHint is true or left out
// (MCP's default), as with no annotations at all.
func TestReadOnlyAndDestructiveComeFromTheHints(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		name                  string
		a                     *sdk.ToolAnnotations
		readOnly, destructive bool
	}{
		{"no annotations", nil, false, true},
		{"no hints", &sdk.ToolAnnotations{Title: "t"}, false, true},
		{"read-only", &sdk.ToolAnnotations{ReadOnlyHint: true}, true, false},
		{"read-only, destructive said", &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}, true, false},
		{"destructive said", &sdk.ToolAnnotations{DestructiveHint: &yes}, false, true},
		{"only additive", &sdk.ToolAnnotations{DestructiveHint: &no}, false, false},
	} {
		if r, d := readOnly(tt.a), destructive(tt.a); r != tt.readOnly || d != tt.destructive {
			t.Errorf("%s: read-only %v, destructive %v; want %v, %v", tt.name, r, d, tt.readOnly, tt.destructive)
		}
	}
}
