package script

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/mcp/mcptest"
)

// An MCP server's text-only result reaches a script as its text, and its
// structured content whole: the server here runs in process, over HTTP.
func TestAnMCPResultReachesTheScriptAsTheModelWouldReadIt(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler(false))
	defer srv.Close()
	set := mcp.Start(context.Background(), []mcp.Server{{Name: "m", Type: "http", URL: srv.URL}}, mcp.Options{Dir: t.TempDir()})
	defer set.Close()
	if f := set.Failures(); f != nil {
		t.Fatal(f)
	}
	r := newRig(t, Limits{}, set.Tools()...)
	out, _ := r.run(`
		const e = await tools["m--echo"]({text: "said \"so\"\n{not json"});
		const s = await tools["m--structured"]({});
		const f = await tools["m--fail"]({});
		return [e.content[0].text, s.structuredContent.items.join("+"), f.isError, f.content[0].text]`)
	want := `["said \"so\"\n{not json","a+b",true,"it went wrong: no such thing"]`
	if out.IsError || out.Text != want {
		t.Errorf("got %s\nwant %s", out.Text, want)
	}
	if !strings.Contains(r.exec.Description, "m--echo") {
		t.Errorf("the description does not list the MCP tools: %s", r.exec.Description)
	}
}
