package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
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

// `history list --json` was silently ignored (issue 27 §12): it prints the
// conversations as JSON, and --json with a command that has no JSON form
// is a usage error.
func TestHistoryListJSONIsAnArrayOfTheConversations(t *testing.T) {
	dir := workspaceWith(t, nil)
	out, _, code := cli(t, "history", "list", "--json", "--workspace", dir)
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("no store yet: exit %d, %q; want []", code, out)
	}
	fakeAnthropic(t, providertest.Step{Text: "hello"})
	_, errOut, _ := cli(t, "run", "--workspace", dir, "say hi")
	id := conversationID(t, errOut)
	out, errOut, code = cli(t, "history", "list", "--json", "--workspace", dir)
	var list []struct {
		ID          string `json:"id"`
		Messages    int    `json:"messages"`
		FirstPrompt string `json:"first_prompt"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 {
		t.Fatalf("exit %d, %q (%v), stderr %q", code, out, err, errOut)
	}
	if len(list) != 1 || list[0].ID != id || list[0].Messages != 2 || list[0].FirstPrompt != "say hi" {
		t.Fatalf("list %+v", list)
	}
	if _, errOut, code := cli(t, "history", "delete", id, "--json", "--workspace", dir); code != exitUsage || !strings.Contains(errOut, "--json goes with history list and history show") {
		t.Fatalf("delete --json: exit %d, %q", code, errOut)
	}
}
