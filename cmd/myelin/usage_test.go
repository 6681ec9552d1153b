package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
)

// flagListIsEmpty reports whether s has a "Flags...:" heading that no flag
// line ("  -name") follows.
func flagListIsEmpty(s string) bool {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Flags") && strings.HasSuffix(l, ":") {
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "  -") {
				return true
			}
		}
	}
	return false
}

func TestHelpPrintsTheUsageOnceOnStdoutWithItsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"tool", "list", "--help"}, {"tool", "call", "--help"}, {"tool", "describe", "--help"}, {"tool", "call", "-h"},
		{"tool", "--help"}, {"tool", "help"},
		{"mcp", "list", "--help"}, {"mcp", "--help"},
		{"history", "list", "--help"}, {"history", "show", "-h"}, {"history", "help"},
		{"run", "--help"}, {"chat", "-h"},
	} {
		out, errOut, code := cli(t, args...)
		if code != 0 || errOut != "" {
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing on stderr", args, code, errOut)
		}
		if n := strings.Count(out, "Usage:"); n != 1 {
			t.Errorf("%q: the usage is printed %d times on stdout:\n%s", args, n, out)
		}
		if !strings.Contains(out, "\nFlags (before or after the arguments):\n  -") || flagListIsEmpty(out) {
			t.Errorf("%q: no flag list after the usage:\n%s", args, out)
		}
	}
}

func TestUsageErrorSaysWhatWasWrongOnceWithoutAnEmptyFlagList(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tool"}, "myelin tool: want a command: list, describe or call"},
		{[]string{"tool", "frob"}, `unknown command "frob"`},
		{[]string{"tool", "call", "x"}, `want NAME and ARGS_JSON, got 1 arguments ["x"]`},
		{[]string{"tool", "call", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"tool", "list", "extra", "--workspace", dir}, `takes no arguments, got ["extra"]`},
		{[]string{"tool", "describe", "--workspace", dir}, "want one tool NAME, got 0 arguments"},
		{[]string{"tool", "call", "workspace--read", "{x", "--workspace", dir}, "ARGS_JSON is not valid JSON: {x"},
		{[]string{"mcp"}, "myelin mcp: want a command: list"},
		{[]string{"mcp", "list", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"history"}, "myelin history: want a command: list, show, delete, prune, fork, rewind, undo, redo, branches or switch"},
		{[]string{"history", "show", "--workspace", dir}, "want one conversation ID, got 0 arguments"},
		{[]string{"history", "list", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"run", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"chat", "extra"}, `takes no arguments, got ["extra"]`},
	} {
		out, errOut, code := cli(t, tc.args...)
		if code != exitUsage || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing on stdout", tc.args, code, out)
		}
		if !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errOut, tc.want)
		}
		if strings.Contains(errOut, "Usage:") || flagListIsEmpty(errOut) {
			t.Errorf("%q: a usage error printed the usage:\n%s", tc.args, errOut)
		}
		if !strings.Contains(errOut, "--help\" for its usage and flags.") {
			t.Errorf("%q: stderr %q does not say where the usage is", tc.args, errOut)
		}
	}
}

func TestAToolOfferedOnlyWithAFlagSaysWhichFlag(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tool", "call", "shell--run", `{"command":"echo hi"}`, "--workspace", dir}, "shell--run is offered only with --allow-shell"},
		{[]string{"tool", "describe", "shell--run", "--workspace", dir}, "shell--run is offered only with --allow-shell"},
		{[]string{"tool", "call", "code_execution", `{"code":"1"}`, "--workspace", dir, "--no-code-execution"}, "code_execution is not offered because of --no-code-execution"},
		{[]string{"tool", "call", "nope", `{}`, "--workspace", dir}, `there is no tool named "nope"; ` + "`myelin tool list` lists them"},
	} {
		_, errOut, code := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestToolDescribeShowsTheDescriptionAndTheInputSchema(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := cli(t, "tool", "describe", "workspace--read", "--workspace", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"workspace--read\n\nRead a text file of the workspace, a page at a time.\n",
		"A page always fits in the conversation.\n\nInput schema:\n{\n",
		`"path": {`, `"required": [`, `"additionalProperties": false`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	out, _, code = cli(t, "tool", "describe", "--json", "shell--run", "--allow-shell", "--workspace", dir)
	for _, want := range []string{`{"name":"shell--run","description":"Run a shell command`, `"input_schema":{"type":"object",`, `"command":{"type":"string"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("describe --json: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
}

// The schema error comes from package tool; the CLI shows it as the model
// reads it.
func TestASchemaErrorNamesTheFieldsTheToolTakes(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, input string }{
		{"a field it does not take", `{"pth":"a.txt"}`},
		{"a field missing", `{}`},
		{"a field of the wrong type", `{"path":3}`},
	} {
		out, _, code := cli(t, "tool", "call", "workspace--read", tc.input, "--workspace", dir)
		want := "; workspace--read takes path (string, required), offset (integer), limit (integer), offsetChars (integer), limitChars (integer)"
		if code != exitError || !strings.HasPrefix(out, "invalid input for workspace--read: ") || !strings.HasSuffix(out, want) {
			t.Errorf("%s: exit %d, %q; want it to end %q", tc.name, code, out, want)
		}
	}
}

func TestFlagValuesThatWouldBeChangedSilentlyAreRefused(t *testing.T) {
	dir := t.TempDir()
	fakeAnthropic(t, providertest.Step{Text: "never"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tool", "call", "workspace--list", "{}", "--inline-cap", "500", "--workspace", dir}, "--inline-cap 500: the inline cap is at least 1000 characters"},
		{[]string{"tool", "call", "workspace--list", "{}", "--inline-cap", "0", "--workspace", dir}, "--inline-cap 0: the inline cap is at least 1000"},
		{[]string{"tool", "call", "workspace--list", "{}", "--inline-cap=-3", "--workspace", dir}, "--inline-cap -3: the inline cap is at least 1000"},
		{[]string{"run", "--inline-cap", "999", "--workspace", dir, "hi"}, "--inline-cap 999: the inline cap is at least 1000"},
		{[]string{"run", "--model", "", "--workspace", dir, "hi"}, `--model "": give a model name, or leave the flag out for the default`},
		{[]string{"chat", "--model= ", "--workspace", dir}, `--model " ": give a model name`},
	} {
		_, errOut, code := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	if _, errOut, code := cli(t, "tool", "call", "workspace--list", "{}", "--inline-cap", "1000", "--workspace", dir); code != 0 {
		t.Fatalf("--inline-cap 1000: exit %d, %q", code, errOut)
	}
}

func TestHistoryListSaysWhenThereAreNoConversations(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := cli(t, "history", "list", "--workspace", dir)
	store := filepath.Join(dir, ".myelin", "history.db")
	if code != 0 || out != "no conversations: there is no history store at "+store+" yet; `myelin run PROMPT` starts one\n" || errOut != "" {
		t.Fatalf("no store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("history list made a store: %v", err)
	}
	if _, errOut, code := cli(t, "history", "show", "c1", "--workspace", dir); code != exitError || !strings.Contains(errOut, `no such conversation "c1": there is no history store at `+store) {
		t.Fatalf("show without a store: exit %d, %q", code, errOut)
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	st, err := sqlite.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	out, errOut, code = cli(t, "history", "list", "--store", empty)
	if code != 0 || out != "no conversations in "+empty+" yet; `myelin run PROMPT` starts one\n" || errOut != "" {
		t.Fatalf("an empty store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestChatWithoutATerminalPrintsNoPrompt(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t, providertest.Step{Text: "one"}, providertest.Step{Text: "two"})
	out, errOut, code := cliIn(t, "first\nsecond\n", "chat", "--workspace", dir)
	if code != 0 || out != "one\ntwo\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if strings.Contains(errOut, "> ") || strings.HasSuffix(errOut, "\n\n") {
		t.Fatalf("chat prompted on a pipe: stderr %q", errOut)
	}
}

// After `--` every word is positional, also one that looks like a flag:
// flag.Parse takes the `--` itself, and the check missed it.
func TestAfterDoubleDashEveryWordIsPositional(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--", "what", "does", "--force", "do"}, "what does --force do"},
		{[]string{"what", "--", "does", "--force", "do"}, "what does --force do"},
		{[]string{"--workspace", "w", "a", "--", "-x"}, "a -x"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("workspace", "", "")
		pos, err := parseInterleaved(fs, tc.args)
		if err != nil || strings.Join(pos, " ") != tc.want {
			t.Fatalf("%q: %q, %v; want %q", tc.args, pos, err, tc.want)
		}
	}
}

// Issue 27 §8: values the agent replaced without a word (--max-tokens -5
// was sent as 8192, --max-rounds 0 ran with the default), and mistakes
// that failed as errors (exit 1) after the provider and the store were
// opened, are usage errors: one line, exit 2, before anything starts.
func TestFlagValuesOutOfTheirRangeAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ANTHROPIC_API_KEY", "k")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--max-tokens", "-5", "hi"}, "--max-tokens -5: give the most tokens of an answer, 1 or more"},
		{[]string{"run", "--max-tokens", "0", "hi"}, "--max-tokens 0:"},
		{[]string{"run", "--max-rounds", "0", "hi"}, "--max-rounds 0: give the most tool rounds of a turn, 1 or more"},
		{[]string{"chat", "--max-rounds", "-1"}, "--max-rounds -1:"},
		{[]string{"run", "--provider", "foo", "hi"}, `--provider "foo": want anthropic, openai, openai-responses, gemini, bedrock, vertex or google-cloud`},
		{[]string{"run", "--script-time", "0", "hi"}, "--script-time"},
		{[]string{"run", "--continue", "--conversation", "abc", "hi"}, "--continue and --conversation abc: give one of them"},
		{[]string{"run", "--conversation", " ", "hi"}, `--conversation " ": give a conversation's ID`},
	} {
		args := append(append([]string{}, tc.args...), "--workspace", dir)
		out, errOut, code := cli(t, args...)
		if code != exitUsage || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing on stdout (stderr %q)", tc.args, code, out, errOut)
			continue
		}
		if !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 1 {
			t.Errorf("%q: stderr %q; want one line with %q, then where the usage is", tc.args, errOut, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".myelin")); err == nil {
		t.Error("a usage error made the workspace's .myelin: something started before the flags were checked")
	}
}
