package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// Issue 10 §2: myelin's own files were opened by plain path. With .myelin
// a symbolic link, `run` wrote the whole conversation (history.db) where it
// led; with .myelin/logs/trace.log one, every script call appended to the
// file it led to; with .myelin/logs/mcp-<server>.log one, the server's
// stderr went there. A cloned repository can plant any of them.

// plantLink makes name in dir a symbolic link to a directory outside
// (made here, with one file in it) and returns that directory.
func plantLink(t *testing.T, dir, name string) string {
	t.Helper()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "mine.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	return outside
}

// assertUntouched checks that the directory outside holds only mine.txt,
// as it was.
func assertUntouched(t *testing.T, outside string) {
	t.Helper()
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("myelin wrote where the link leads: %q", names)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "mine.txt")); string(b) != "mine\n" {
		t.Fatalf("mine.txt was changed: %q", b)
	}
}

func TestALinkedMyelinDirStopsEveryCommandBeforeItWrites(t *testing.T) {
	for _, linked := range []string{".myelin", ".myelin/logs", ".myelin/shell", ".myelin/tool-results"} {
		for _, args := range [][]string{
			{"run", "hello"},
			{"tool", "call", "workspace--list", `{}`},
			{"tool", "list"},
			{"mcp", "list"},
		} {
			t.Run(linked+" "+args[0]+" "+args[1], func(t *testing.T) {
				dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
				outside := plantLink(t, dir, linked)
				srv := fakeAnthropic(t, providertest.Step{Text: "never asked"})
				_, errOut, code := cli(t, append(args, "--workspace", dir)...)
				want := filepath.Join(dir, linked) + " is a symbolic link (to " + outside + ")"
				if code == 0 || !strings.Contains(errOut, want) {
					t.Fatalf("exit %d, stderr %q; want an error saying %q", code, errOut, want)
				}
				if args[0] == "run" && len(srv.Requests()) != 0 {
					t.Errorf("the run asked the model %d times", len(srv.Requests()))
				}
				assertUntouched(t, outside)
			})
		}
	}
}

func TestALinkedStoreFileStopsRunAndHistory(t *testing.T) {
	for _, file := range []string{"history.db", "history.db-wal", "history.db-journal"} {
		for _, args := range [][]string{{"run", "hello"}, {"history", "list"}} {
			t.Run(file+" "+args[0], func(t *testing.T) {
				dir := workspaceWith(t, map[string]string{".myelin/keep": ""})
				outsideFile := filepath.Join(t.TempDir(), "elsewhere.db")
				if err := os.Symlink(outsideFile, filepath.Join(dir, ".myelin", file)); err != nil {
					t.Fatal(err)
				}
				fakeAnthropic(t, providertest.Step{Text: "never asked"})
				_, errOut, code := cli(t, append(args, "--workspace", dir)...)
				want := "refusing to use the history store: " + filepath.Join(dir, ".myelin", file) + " is a symbolic link (to " + outsideFile + ")"
				if code == 0 || !strings.Contains(errOut, want) {
					t.Fatalf("exit %d, stderr %q; want %q", code, errOut, want)
				}
				if _, err := os.Lstat(outsideFile); err == nil {
					t.Fatalf("the store was made where the link leads")
				}
			})
		}
	}
}

func TestALinkedTraceLogIsNotFollowedAndWarnedOfOnce(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	outside := plantLink(t, t.TempDir(), "unused")
	target := filepath.Join(outside, "mine.txt")
	if err := os.MkdirAll(filepath.Join(dir, ".myelin", "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, ".myelin", "logs", "trace.log")); err != nil {
		t.Fatal(err)
	}
	code := `await tools["workspace--read"]({path: "a.txt"}); return "read"`
	out, errOut, exit := cli(t, "tool", "call", "code_execution", `{"code":`+quote(code)+`}`, "--workspace", dir)
	if exit != 0 || !strings.Contains(out, "read") {
		t.Fatalf("exit %d: %s %s", exit, out, errOut)
	}
	warning := filepath.Join(dir, ".myelin", "logs", "trace.log") + " is a symbolic link (to " + target + "); myelin does not follow it"
	if strings.Count(errOut, warning) != 1 {
		t.Errorf("stderr %q; want one warning saying %q", errOut, warning)
	}
	assertUntouched(t, outside)
}

func TestALinkedMCPLogIsNotFollowed(t *testing.T) {
	dir := workspaceWith(t, nil)
	config := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(config, []byte(mcpConfig(t, "test")), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := plantLink(t, t.TempDir(), "unused")
	target := filepath.Join(outside, "mine.txt")
	if err := os.MkdirAll(filepath.Join(dir, ".myelin", "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, ".myelin", "logs", "mcp-test.log")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, "tool", "call", "test--echo", `{"text":"hi"}`, "--workspace", dir, "--mcp-config", config)
	if code != 0 || out != "hi" {
		t.Fatalf("exit %d: %q %s", code, out, errOut)
	}
	if !strings.Contains(errOut, filepath.Join(dir, ".myelin", "logs", "mcp-test.log")+" is a symbolic link") {
		t.Errorf("stderr %q; want a warning naming the link", errOut)
	}
	assertUntouched(t, outside)
}

// The same through the built binary: a cloned repository with .myelin
// linked out, and a run in it.
func TestTheBinaryRefusesToRunInAWorkspaceWhoseMyelinDirIsALink(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	outside := plantLink(t, dir, ".myelin")
	srv := fakeAnthropic(t, providertest.Step{Text: "never asked"})
	cmd := exec.Command(bin, "run", "--workspace", dir, "hello")
	cmd.Env = os.Environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	want := "myelin run: refusing to start: " + filepath.Join(dir, ".myelin") + " is a symbolic link (to " + outside + ")"
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), want) {
		t.Fatalf("%v, stdout %q, stderr %q; want exit 1 and %q", err, stdout.String(), stderr.String(), want)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("the run asked the model")
	}
	assertUntouched(t, outside)
}
