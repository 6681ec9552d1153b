package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 10: arguments over 128 KiB could not be passed on the command line
// (the kernel's bound on one argument). ARGS_JSON `-` reads them from
// standard input, `@FILE` from a file.
func TestToolCallTakesArgsJSONFromStdinOrAFile(t *testing.T) {
	content := strings.Repeat("0123456789abcdef", 200<<10/16) // 200 KiB
	args, err := json.Marshal(map[string]string{"path": "big.txt", "content": content})
	if err != nil {
		t.Fatal(err)
	}
	argsFile := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(argsFile, args, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(dir string) (string, string, int){
		"stdin": func(dir string) (string, string, int) {
			return cliIn(t, string(args), "tool", "call", "workspace--write", "-", "--workspace", dir)
		},
		"file": func(dir string) (string, string, int) {
			return cli(t, "tool", "call", "workspace--write", "@"+argsFile, "--workspace", dir)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, code := call(dir)
			if code != 0 || !strings.HasPrefix(out, "created big.txt: 204800 characters") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			got, err := os.ReadFile(filepath.Join(dir, "big.txt"))
			if err != nil || string(got) != content {
				t.Fatalf("big.txt holds %d bytes (%v), want %d", len(got), err, len(content))
			}
		})
	}
}

func TestToolCallArgsJSONFromStdinOrAFileMustBeJSON(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stdin string
		arg   string
		say   string
	}{
		{"{x", "-", "ARGS_JSON from standard input is not valid JSON: {x"},
		{"", "-", "ARGS_JSON from standard input is not valid JSON"},
		{"", "@" + bad, "ARGS_JSON from file " + bad + " is not valid JSON: {not json"},
		{"", "@" + filepath.Join(dir, "missing.json"), "missing.json: no such file or directory"},
		{"", "@", `ARGS_JSON "@" names no file`},
		{"", "{" + strings.Repeat("x", 5000), "…"},
	} {
		_, errOut, code := cliIn(t, tc.stdin, "tool", "call", "workspace--read", tc.arg, "--workspace", dir)
		if code != exitUsage || !strings.Contains(errOut, tc.say) || len(errOut) > 1000 {
			t.Errorf("%s: exit %d, stderr %q; want a usage error saying %q", tc.arg, code, errOut, tc.say)
		}
	}
}

// Issue 27 §12: the tool commands list and describe what the model is
// offered: code_execution's background tools were offered to the model
// but unknown to `tool describe`.
func TestToolListAndDescribeKnowTheToolsTheModelIsOffered(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := cli(t, "tool", "list", "--workspace", dir)
	if code != 0 {
		t.Fatalf("tool list: exit %d, %s", code, errOut)
	}
	for _, name := range []string{"code_execution", "code_execution--list", "code_execution--cancel", "workspace--read"} {
		if !strings.Contains(out, name+"\t") {
			t.Errorf("tool list does not list %s:\n%s", name, out)
		}
	}
	out, errOut, code = cli(t, "tool", "describe", "code_execution--list", "--workspace", dir)
	if code != 0 || !strings.Contains(out, "background scripts") {
		t.Fatalf("tool describe code_execution--list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, _ = cli(t, "tool", "describe", "code_execution", "--workspace", dir)
	if !strings.Contains(out, "background: true") {
		t.Fatalf("code_execution is described without its background scripts, unlike what the model reads:\n%s", out)
	}
}
