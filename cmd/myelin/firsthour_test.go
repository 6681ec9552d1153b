package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a new user met in their first hour (issue 27 §12).

func TestHelpNamesEverySubcommand(t *testing.T) {
	out, _, code := cli(t, "help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, sub := range []string{"history list", "history show", "tool list", "tool describe", "tool call", "mcp list", "mcp trust", "mcp login", "serve", "version"} {
		if !strings.Contains(out, "myelin "+sub) {
			t.Errorf("myelin help does not name %q:\n%s", sub, out)
		}
	}
}

func TestWithNoKeyAtAllTheErrorNamesEveryProvidersVariable(t *testing.T) {
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		t.Setenv(v, "")
	}
	_, errOut, code := cli(t, "run", "--workspace", t.TempDir(), "hi")
	if code == 0 {
		t.Fatal("run without a key succeeded")
	}
	for _, want := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "--provider bedrock"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the error does not name %s: %s", want, errOut)
		}
	}
}

func TestMCPListSaysWhetherThereIsNoFileOrNothingApproved(t *testing.T) {
	dir := t.TempDir()
	out, _, code := cli(t, "mcp", "list", "--workspace", dir)
	if code != 0 || !strings.Contains(out, "there is no "+filepath.Join(dir, ".mcp.json")) || strings.Contains(out, "approved") {
		t.Fatalf("exit %d, %q: want it to say there is no .mcp.json", code, out)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers":{"x":{"command":"true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ = cli(t, "mcp", "list", "--workspace", dir)
	if !strings.Contains(out, "none approved") || !strings.Contains(out, "mcp trust") {
		t.Fatalf("%q: want it to say the file's servers are not approved, and how to approve them", out)
	}
}
