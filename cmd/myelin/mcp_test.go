package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/provider/providertest"
)

// mcpConfig is an mcpServers document that starts this test binary as the
// MCP test server under each name.
func mcpConfig(t *testing.T, names ...string) string {
	t.Helper()
	cmd, env := mcptest.Command()
	servers := map[string]any{}
	for _, n := range names {
		servers[n] = map[string]any{"command": cmd, "env": env}
	}
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestMCPListShowsEachServerItsStateAndItsTools(t *testing.T) {
	dir := workspaceWith(t, map[string]string{".mcp.json": mcpConfig(t, "test")})
	broken := filepath.Join(t.TempDir(), "broken.json")
	os.WriteFile(broken, []byte(`{"mcpServers":{"broken":{"command":"/nonexistent/mcp-server"}}}`), 0o644)
	out, _, code := cli(t, "mcp", "list", "--workspace", dir, "--mcp-config", broken)
	if code != 1 {
		t.Errorf("exit %d with a server that did not start, want 1", code)
	}
	for _, want := range []string{"broken\tstdio\tfailed: ", "/nonexistent/mcp-server", "\t0 tools\n", "test\tstdio\trunning\t", "  test--echo\tReturns its text.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("mcp list lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "broken\t") > strings.Index(out, "test\t") {
		t.Errorf("servers not in name order:\n%s", out)
	}
}

func TestToolListAndCallIncludeMCPTools(t *testing.T) {
	dir := workspaceWith(t, nil)
	config := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(config, []byte(mcpConfig(t, "test")), 0o644)
	out, _, code := cli(t, "tool", "list", "--workspace", dir, "--mcp-config", config)
	if code != 0 || !strings.Contains(out, "test--echo\tReturns its text.\n") || !strings.Contains(out, "workspace--read\t") {
		t.Fatalf("exit %d, list:\n%s", code, out)
	}
	out, errOut, code := cli(t, "tool", "call", "test--echo", `{"text":"from \"mcp\"\n"}`, "--workspace", dir, "--mcp-config", config)
	if code != 0 || out != "from \"mcp\"\n" {
		t.Fatalf("exit %d, %q %s", code, out, errOut)
	}
	out, _, code = cli(t, "tool", "call", "test--fail", `{}`, "--workspace", dir, "--mcp-config", config)
	if code != 1 || out != "it went wrong: no such thing" {
		t.Fatalf("an error result: exit %d, %q", code, out)
	}
}

func TestABadMCPConfigIsAUsageErrorNamingTheFile(t *testing.T) {
	dir := workspaceWith(t, map[string]string{".mcp.json": `{"mcpServers":{"x":{"command":"run","url":"http://h"}}}`})
	_, errOut, code := cli(t, "tool", "list", "--workspace", dir)
	if code != 2 || !strings.Contains(errOut, ".mcp.json") || !strings.Contains(errOut, `server "x"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// The .mcp.json dropped into a workspace is offered to the model, and an
// MCP image goes natively on the wire and as a placeholder in history.
func TestRunOffersAndCallsTheWorkspacesMCPTools(t *testing.T) {
	dir := workspaceWith(t, map[string]string{".mcp.json": mcpConfig(t, "test")})
	srv := fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "test--every", Input: `{}`}}},
		providertest.Step{Text: "seen"})
	out, errOut, code := cli(t, "run", "--workspace", dir, "show me everything")
	if code != 0 || out != "seen\n" {
		t.Fatalf("exit %d, %q: %s", code, out, errOut)
	}
	var names []string
	for _, tl := range srv.Request(0)["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if !strings.Contains(strings.Join(names, " "), "test--echo test--env test--every") {
		t.Errorf("tools offered: %v", names)
	}
	wire, _ := json.Marshal(srv.Request(1)["messages"])
	if !strings.Contains(string(wire), `"type":"image"`) || !strings.Contains(string(wire), `"media_type":"image/png"`) {
		t.Errorf("the image is not native on the wire: %s", wire)
	}
	id := conversationID(t, errOut)
	shown, _, _ := cli(t, "history", "show", id, "--workspace", dir)
	if !strings.Contains(shown, "[image: image/png, ") || strings.Contains(shown, "iVBOR") {
		t.Errorf("history does not hold the placeholder alone:\n%s", shown)
	}
}

func TestRunReportsAServerThatDidNotStartOnceAndGoesOn(t *testing.T) {
	dir := workspaceWith(t, map[string]string{".mcp.json": `{"mcpServers":{"gone":{"command":"/nonexistent/mcp-server"},"keyless":{"command":"x","env":{"K":"${MYELIN_TEST_UNSET_VAR}"}}}}`})
	fakeAnthropic(t, providertest.Step{Text: "fine"})
	out, errOut, code := cli(t, "run", "--workspace", dir, "hi")
	if code != 0 || out != "fine\n" {
		t.Fatalf("exit %d, %q: %s", code, out, errOut)
	}
	for _, name := range []string{"gone", "keyless"} {
		if n := strings.Count(errOut, "MCP server "+name+" did not start"); n != 1 {
			t.Errorf("%s reported %d times:\n%s", name, n, errOut)
		}
	}
	if !strings.Contains(errOut, "${MYELIN_TEST_UNSET_VAR}, which is not set") {
		t.Errorf("stderr does not say which variable:\n%s", errOut)
	}
}
