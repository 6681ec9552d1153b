package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

func workspaceWith(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestToolListIsNameTabSummaryInStableOrder(t *testing.T) {
	out, _, code := cli(t, "tool", "list", "--workspace", t.TempDir(), "--no-code-execution")
	want := "workspace--edit\tReplace exact text in a workspace file.\n" +
		"workspace--glob\tFind workspace files whose path matches a glob.\n" +
		"workspace--grep\tSearch the workspace's text files for an RE2 regular expression.\n" +
		"workspace--list\tList a directory of the workspace.\n" +
		"workspace--read\tRead a text file of the workspace, a page at a time.\n" +
		"workspace--write\tWrite a whole file in the workspace, making missing directories.\n"
	if out != want || code != 0 {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	out, _, _ = cli(t, "tool", "list", "--allow-shell", "--workspace", t.TempDir())
	if !strings.HasPrefix(out, "code_execution\tRun JavaScript that calls the other tools: many calls, loops and filtering in one step.\ncode_execution--cancel\t") ||
		!strings.Contains(out, "\ncode_execution--list\t") || !strings.Contains(out, "\nshell--run\tRun a shell command (bash -c) in the workspace root.\nworkspace--edit\t") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestToolCallPrintsTheStoredTextByteForByte(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "tab\there \"quoted\"\n"})
	out, errOut, code := cli(t, "tool", "call", "workspace--read", `{"path":"a.txt"}`, "--workspace", dir)
	if want := "     1\ttab\there \"quoted\"\n[lines 1-1 of 1 in a.txt; end of file]"; out != want || code != 0 || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestFlagsMayComeBeforeTheArguments(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "x\n"})
	a, _, _ := cli(t, "tool", "call", "--workspace", dir, "workspace--read", `{"path":"a.txt"}`)
	b, _, _ := cli(t, "tool", "call", "workspace--read", "--workspace", dir, `{"path":"a.txt"}`)
	c, _, _ := cli(t, "tool", "call", "workspace--read", `{"path":"a.txt"}`, "--workspace="+dir)
	if a != b || b != c || !strings.Contains(a, "x") {
		t.Fatalf("%q %q %q", a, b, c)
	}
}

func TestToolCallExitStatus(t *testing.T) {
	dir := workspaceWith(t, nil)
	if _, _, code := cli(t, "tool", "call", "workspace--read", `{"path":"missing"}`, "--workspace", dir); code != 1 {
		t.Errorf("error result: exit %d, want 1", code)
	}
	out, _, code := cli(t, "tool", "call", "workspace--read", `{"path":"../x"}`, "--workspace", dir)
	if code != 1 || !strings.Contains(out, "contains \"..\"") {
		t.Errorf("error result: exit %d, %q", code, out)
	}
	for _, args := range [][]string{
		{"tool", "call", "workspace--read"},
		{"tool", "call", "workspace--read", "{not json", "--workspace", dir},
		{"tool", "call", "nope", "{}", "--workspace", dir},
		{"tool", "call", "workspace--read", "{}", "--bogus"},
		{"tool", "call", "workspace--read", "{}", "--inline-cap", "x"},
		{"tool", "call", "workspace--read", "{}", "--workspace", filepath.Join(dir, "nowhere")},
		{"tool", "frob"},
		{"frob"},
		{},
	} {
		_, errOut, code := cli(t, args...)
		if code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
}

func TestToolCallJSON(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "<b>&</b>\n"})
	out, _, code := cli(t, "tool", "call", "workspace--read", `{"path":"a.txt"}`, "--workspace", dir, "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("exit %d, %q: %v", code, out, err)
	}
	if v["text"] != "     1\t<b>&</b>\n[lines 1-1 of 1 in a.txt; end of file]" || v["is_error"] != false || v["structured"] == nil {
		t.Fatalf("json = %v", v)
	}
	if _, ok := v["spill_path"]; ok {
		t.Fatal("spill_path present without a spill")
	}
	if strings.Contains(out, `\u003c`) {
		t.Fatal("HTML was escaped")
	}
}

func TestCallIDNamesTheSpillFile(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"big.txt": strings.Repeat("a line of text\n", 5000)})
	out, _, code := cli(t, "tool", "call", "workspace--read", `{"path":"big.txt"}`, "--workspace", dir, "--inline-cap", "1000", "--call-id", "my call/1", "--json")
	var v struct {
		Text      string `json:"text"`
		SpillPath string `json:"spill_path"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	// a read page fits its cap and never spills; the shell output does
	if v.SpillPath != "" {
		t.Fatalf("a read page spilled: %s", v.SpillPath)
	}
	out, _, code = cli(t, "tool", "call", "shell--run", `{"command":"seq 1 5000"}`, "--allow-shell", "--workspace", dir, "--inline-cap", "1000", "--call-id", "my call/1", "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	want := ".myelin/tool-results/" + time.Now().UTC().Format("2006-01-02") + "-my_call_1.txt"
	if v.SpillPath != want || !strings.Contains(v.Text, want) {
		t.Fatalf("spill path %q, want %q", v.SpillPath, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, want)); strings.Count(string(b), "\n") != 5000 {
		t.Fatal("the spill file does not hold the whole output")
	}
}

func TestShellIsOfferedOnlyWithAllowShell(t *testing.T) {
	_, errOut, code := cli(t, "tool", "call", "shell--run", `{"command":"echo hi"}`, "--workspace", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "shell--run is offered only with --allow-shell") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	out, _, code := cli(t, "tool", "call", "shell--run", `{"command":"echo hi; exit 4"}`, "--workspace", t.TempDir(), "--allow-shell")
	if code != 1 || out != "hi\n[exit status 4]" {
		t.Fatalf("exit %d, %q", code, out)
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"tool", "--help"}, {"tool", "list", "--help"}, {"tool", "call", "--help"}, {"tool", "call", "-h"}, {"version", "--help"}, {"help", "--help"}} {
		out, _, code := cli(t, args...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%q: exit %d, %q", args, code, out)
		}
	}
	if out, _, code := cli(t, "version"); code != 0 || !strings.HasPrefix(out, "myelin ") {
		t.Fatalf("version: %d %q", code, out)
	}
}

// Saying shell--run is not offered touches nothing: it named the tool by
// making it, which cleaned the output files a dead process left under
// .myelin/shell/ — of the directory myelin ran in, not the workspace.
func TestSayingShellIsNotOfferedLeavesTheDirectorysFilesAlone(t *testing.T) {
	cwd := t.TempDir()
	stale := filepath.Join(cwd, ".myelin", "shell", "left.out")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("a dead process's output"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	if _, errOut, code := cli(t, "tool", "call", "shell--run", `{"command":"echo hi"}`, "--workspace", t.TempDir()); code != 2 || !strings.Contains(errOut, "offered only with --allow-shell") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("the output file in the directory myelin ran in is gone: %v", err)
	}
}
