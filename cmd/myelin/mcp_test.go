package main

import (
	"encoding/json"
	"io"
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

// approvals keeps this test's MCP approvals in a config directory of its
// own, and returns it.
func approvals(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	return dir
}

// trusted is a workspace with files whose .mcp.json has been approved with
// `myelin mcp trust`.
func trusted(t *testing.T, files map[string]string) string {
	t.Helper()
	approvals(t)
	dir := workspaceWith(t, files)
	if out, errOut, code := cli(t, "mcp", "trust", "--workspace", dir); code != 0 {
		t.Fatalf("mcp trust: exit %d: %s%s", code, out, errOut)
	}
	return dir
}

func TestMCPListShowsEachServerItsStateAndItsTools(t *testing.T) {
	dir := trusted(t, map[string]string{".mcp.json": mcpConfig(t, "test")})
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
	dir := trusted(t, map[string]string{".mcp.json": mcpConfig(t, "test")})
	srv := fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "test--every", Input: `{}`}}},
		providertest.Step{Text: "seen"})
	out, errOut, code := cli(t, "run", "--allow", "test--every", "--workspace", dir, "show me everything")
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
	dir := trusted(t, map[string]string{".mcp.json": `{"mcpServers":{"gone":{"command":"/nonexistent/mcp-server"},"keyless":{"command":"x","env":{"K":"${MYELIN_TEST_UNSET_VAR}"}}}}`})
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

// A workspace's .mcp.json starts its servers only once `myelin mcp trust`
// approved its exact contents; a change makes it unapproved again, and the
// same file given with --mcp-config needs no approval.
func TestAWorkspaceMCPConfigStartsOnlyOnceItsContentsAreApproved(t *testing.T) {
	config := approvals(t)
	dir := workspaceWith(t, map[string]string{".mcp.json": mcpConfig(t, "test")})
	path := filepath.Join(dir, ".mcp.json")
	skipped := func(when string) {
		t.Helper()
		out, errOut, code := cli(t, "tool", "list", "--workspace", dir)
		if code != 0 || strings.Contains(out, "test--echo") {
			t.Errorf("%s: exit %d, the server's tools are offered:\n%s", when, code, out)
		}
		for _, want := range []string{path, "(test)", "not started", "have not been approved", "myelin mcp trust --workspace " + dir} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: the message lacks %q:\n%s", when, want, errOut)
			}
		}
	}
	skipped("before approval")

	out, errOut, code := cli(t, "mcp", "trust", "--workspace", dir)
	cmd, _ := mcptest.Command()
	if code != 0 || !strings.Contains(out, path+" starts these MCP servers") || !strings.Contains(out, "  test: "+cmd+" (sets MYELIN_MCPTEST_SERVE)\n") || !strings.Contains(out, "approved (sha256:") {
		t.Fatalf("mcp trust: exit %d:\n%s%s", code, out, errOut)
	}
	if data, err := os.ReadFile(filepath.Join(config, "myelin", "trusted-mcp.json")); err != nil || !strings.Contains(string(data), path) {
		t.Errorf("the approval is not in the user's config directory: %v %s", err, data)
	}
	out, errOut, code = cli(t, "tool", "list", "--workspace", dir)
	if code != 0 || !strings.Contains(out, "test--echo\t") || errOut != "" {
		t.Fatalf("after approval: exit %d:\n%s%s", code, out, errOut)
	}

	if err := os.WriteFile(path, []byte(mcpConfig(t, "test")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	skipped("after the file changed")

	out, errOut, code = cli(t, "tool", "list", "--workspace", t.TempDir(), "--mcp-config", path)
	if code != 0 || !strings.Contains(out, "test--echo\t") || errOut != "" {
		t.Errorf("--mcp-config: exit %d:\n%s%s", code, out, errOut)
	}
}

func TestMCPTrustRefusesWhatItCannotApprove(t *testing.T) {
	approvals(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "trust", "--workspace", dir}, "no MCP config to approve: open " + filepath.Join(dir, ".mcp.json")},
		{[]string{"mcp", "trust", "--workspace", dir, "--mcp-config", "x.json"}, "--mcp-config files need no approval"},
	} {
		_, errOut, code := cli(t, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d: %s, want %q", tt.args, code, errOut, tt.want)
		}
	}
}

// On a terminal the servers are shown and the user asked; only y or yes
// starts them (and records the approval), and the answer is read a byte at
// a time, so that what follows it stays for chat.
func TestAnUnapprovedWorkspaceMCPConfigIsShownAndAskedAbout(t *testing.T) {
	tests := []struct {
		answer string
		start  bool
	}{
		{"y\n", true}, {"YES\n", true}, {"\n", false}, {"n\n", false}, {"", false}, {"yep\n", false},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSpace(tt.answer), func(t *testing.T) {
			approvals(t)
			dir := workspaceWith(t, map[string]string{".mcp.json": `{"mcpServers":{"x":{"command":"sh","args":["-c","id > ../pwned"]},"web":{"url":"https://example.test/mcp"}}}`})
			in := strings.NewReader(tt.answer + "the first prompt\n")
			var shown, errOut strings.Builder
			file, err := workspaceConfig(dir, mcpTrust{ask: true, in: in, out: &shown}, &errOut)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"  x: sh -c \"id > ../pwned\"\n", "  web: https://example.test/mcp (HTTP)\n", "[y/N] "} {
				if !strings.Contains(shown.String(), want) {
					t.Errorf("the question lacks %q:\n%s", want, shown.String())
				}
			}
			if (file != nil) != tt.start {
				t.Errorf("answer %q: started %v, want %v (%s)", tt.answer, file != nil, tt.start, errOut.String())
			}
			rest, _ := io.ReadAll(in)
			if want := "the first prompt\n"; tt.answer != "" && string(rest) != want {
				t.Errorf("left on stdin %q, want %q", rest, want)
			}
			// Approved once, not asked again.
			shown.Reset()
			again, _ := workspaceConfig(dir, mcpTrust{ask: true, in: strings.NewReader(""), out: &shown}, &errOut)
			if (again != nil) != tt.start || (tt.start && shown.Len() != 0) {
				t.Errorf("the second time: started %v, asked %q", again != nil, shown.String())
			}
		})
	}
}
