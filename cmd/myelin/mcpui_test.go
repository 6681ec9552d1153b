package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

func TestAFieldsAnswerIsReadByItsType(t *testing.T) {
	age := mcp.Field{Name: "age", Type: "integer", Required: true}
	for _, tc := range []struct {
		name  string
		field mcp.Field
		line  string
		want  any
		ok    bool
		err   string
	}{
		{"an empty line takes the default", mcp.Field{Name: "name", Type: "string", Default: "Ann"}, "", "Ann", true, ""},
		{"an empty optional field is left out", mcp.Field{Name: "nick", Type: "string"}, " ", nil, false, ""},
		{"an empty required field is asked again", age, "", nil, false, "age is required"},
		{"an integer", age, "41", int64(41), true, ""},
		{"not an integer", age, "4.5", nil, false, `"4.5" is not an integer`},
		{"a number", mcp.Field{Name: "score", Type: "number"}, "95.5", 95.5, true, ""},
		{"yes", mcp.Field{Name: "ok", Type: "boolean"}, "Yes", true, true, ""},
		{"no", mcp.Field{Name: "ok", Type: "boolean"}, "n", false, true, ""},
		{"not a boolean", mcp.Field{Name: "ok", Type: "boolean"}, "maybe", nil, false, `"maybe" is not yes or no`},
		{"one of the list", mcp.Field{Name: "c", Type: "string", Enum: []string{"red", "blue"}}, "blue", "blue", true, ""},
		{"not one of the list", mcp.Field{Name: "c", Type: "string", Enum: []string{"red", "blue"}}, "green", nil, false, `"green" is not one of red, blue`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok, err := fieldValue(tc.field, tc.line)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || ok != tc.ok || v != tc.want {
				t.Fatalf("got %v (%T), %v, %v; want %v, %v", v, v, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestAFormIsAskedFieldByFieldWithItsDefaults(t *testing.T) {
	e := &mcp.Elicitation{Server: "s", Message: "Who are you?", Mode: "form", Fields: []mcp.Field{
		{Name: "age", Type: "integer", Description: "in years", Required: true},
		{Name: "name", Type: "string", Default: "Ann"},
		{Name: "verified", Type: "boolean", Default: true},
	}}
	var out bytes.Buffer
	// Answer it; age: first not a number, then 41; name and verified: Enter.
	u := &mcpUI{in: strings.NewReader("\nold\n41\n\n\n"), out: &out}
	a, err := u.Elicit(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"age": int64(41), "name": "Ann", "verified": true}
	if a.Action != "accept" || len(a.Content) != 3 || a.Content["age"] != want["age"] || a.Content["name"] != want["name"] || a.Content["verified"] != want["verified"] {
		t.Errorf("answer %+v", a)
	}
	for _, line := range []string{
		"MCP server s asks: Who are you?\n",
		"  age (in years; an integer): ",
		`  "old" is not an integer`,
		"  name (optional) [Ann]: ",
		"  verified (yes or no; optional) [yes]: ",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("no %q in:\n%s", line, out.String())
		}
	}
}

func TestAnElicitationCanBeDeclinedOrCancelledByTheInputsEnd(t *testing.T) {
	form := &mcp.Elicitation{Server: "s", Mode: "form", Fields: []mcp.Field{{Name: "x", Type: "string", Required: true}}}
	url := &mcp.Elicitation{Server: "s", Mode: "url", URL: "https://example.test/a"}
	for _, tc := range []struct {
		name, in string
		e        *mcp.Elicitation
		want     string
	}{
		{"n declines a form", "n\n", form, "decline"},
		{"the input ending mid-form cancels", "\n", form, "cancel"},
		{"Enter after visiting accepts", "\n", url, "accept"},
		{"n declines a URL", "no\n", url, "decline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			u := &mcpUI{in: strings.NewReader(tc.in), out: &out}
			a, err := u.Elicit(context.Background(), tc.e)
			if err != nil || a.Action != tc.want || (a.Action != "accept" && a.Content != nil) {
				t.Fatalf("got %+v, %v; want %s", a, err, tc.want)
			}
			if tc.e.Mode == "url" && !strings.Contains(out.String(), "Open this URL: https://example.test/a\n") {
				t.Errorf("the URL is not shown:\n%s", out.String())
			}
		})
	}
}

func TestNoQuestionIsAskedWithoutATerminal(t *testing.T) {
	u := newMCPUI(strings.NewReader("y\n"), &bytes.Buffer{})
	var o mcp.Options
	u.options(&o)
	if o.Elicitor != nil {
		t.Error("an elicitor is supplied when stdin is not a terminal")
	}
	if o.Notify == nil {
		t.Error("no Notify: a declined elicitation would not be told")
	}
}

// TestAServersNewToolsAreOfferedByANewRegistryOnly pins the between-turns
// rule: after tools/list_changed, refresh builds a new registry with the
// new tools, and the registry a turn in flight holds is left as it was.
func TestAServersNewToolsAreOfferedByANewRegistryOnly(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "grower", Version: "1"}, nil)
	type none struct{}
	sdk.AddTool(srv, &sdk.Tool{Name: "grow"}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(srv, &sdk.Tool{Name: "grown"}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new"}}}, nil, nil
		})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grew"}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer hs.Close()
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"g": map[string]any{"url": hs.URL}}})
	if err := os.WriteFile(cfg, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	f := toolsetFlags{script: script.Limits{Time: script.DefaultTime, ToolCalls: script.DefaultToolCalls, Stack: script.DefaultStack},
		scriptMemory: script.DefaultMemory >> 20, scriptOutput: script.DefaultOutput >> 20, scriptEngines: script.DefaultEngines}
	f.mcp.configs = configList{cfg}
	f.mcp.maxReply = 1
	env := result.Env{Store: ws}
	ts, err := openToolset(context.Background(), ws, f, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.close() // before hs.Close: the standalone stream is open until then
	old := ts.reg
	d := &tool.Dispatcher{Tools: old, Env: env}
	if out := d.Call(context.Background(), tool.Call{ID: "c1", Name: "g--grow", Input: json.RawMessage(`{}`)}); out.Text != "grew" {
		t.Fatalf("grow: %q", out.Text)
	}
	// The notification comes on the standalone stream and the tools are
	// listed again after it: wait for that (the test's deadline bounds it).
	for {
		changed, err := ts.refresh()
		if err != nil {
			t.Fatal(err)
		}
		if changed {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !slices.Contains(ts.reg.Names(), "g--grown") {
		t.Errorf("the new registry: %v", ts.reg.Names())
	}
	if slices.Contains(old.Names(), "g--grown") {
		t.Errorf("the registry of the turn in flight changed: %v", old.Names())
	}
	if !slices.Contains(ts.reg.Names(), "code_execution") {
		t.Errorf("code_execution is not in the new registry: %v", ts.reg.Names())
	}
}
