package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/skipped"
	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/workspace"
)

// pyServer is a stdio MCP server in Python, run as `python3 -m pysrv`
// from a directory outside the workspace (PYTHONPATH): it imports json,
// as most Python servers do, and its one tool, cwd, answers with the
// directory it runs in.
const pyServer = `import sys, json, os
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m: continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "py", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "cwd", "description": "cwd", "inputSchema": {"type": "object"}}]}
    elif m["method"] == "tools/call":
        r = {"content": [{"type": "text", "text": os.getcwd()}]}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n"); sys.stdout.flush()
`

// modelWrites writes a file into the workspace at root the way the model
// does, with workspace--write: what it may write, a server must not run.
func modelWrites(t *testing.T, root, path, content string) {
	t.Helper()
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if r, err := ws.Write(workspace.WriteInput{Path: path, Content: content}); err != nil || r.IsError {
		t.Fatalf("workspace--write %s: %v %v", path, r.Data, err)
	}
}

// A Python server run as `python3 -m module` puts its working directory
// first on sys.path: run in the workspace, a json.py the model wrote there
// was imported, and ran, at the server's start (issue 26, point 4).
func TestAPythonServerDoesNotImportAModuleTheModelWroteInTheWorkspace(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		skipped.Need(t, "python3", "apt-get install python3")
	}
	root, mods := t.TempDir(), t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(mods, "pysrv.py"), []byte(pyServer), 0o644); err != nil {
		t.Fatal(err)
	}
	modelWrites(t, root, "json.py", "open("+quotePy(mark)+", 'w').write('the model ran this')\nfrom _json import *\n")
	h := start(t, []Server{{Name: "py", Type: "stdio", Command: "python3", Args: []string{"-m", "pysrv"}, Env: map[string]string{"PYTHONPATH": mods}}}, Options{Dir: root})
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("the json.py the model wrote in the workspace ran when the server started")
	}
	if f := h.set.Failures(); f != nil {
		t.Fatalf("the server did not start: %v", f)
	}
	out := h.call("py--cwd", `{}`)
	if out.IsError || out.Text == root || strings.HasPrefix(out.Text, root+string(filepath.Separator)) {
		t.Errorf("the server ran in %q (error %v), want a directory outside the workspace %s", out.Text, out.IsError, root)
	}
}

func quotePy(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// sourcingServer is an entry that, like direnv or a wrapper script,
// sources ./.envrc from its working directory when there is one, then
// becomes the test server.
func sourcingServer(name string) Server {
	cmd, env := mcptest.Command()
	return Server{Name: name, Type: "stdio", Command: "sh", Args: []string{"-c", `if [ -f ./.envrc ]; then . ./.envrc; fi; exec "$0"`, cmd}, Env: env}
}

// A file a server's runtime reads from its working directory (.envrc,
// .npmrc, package.json, pyproject.toml) is not the workspace's unless the
// entry names the workspace as its cwd: one the model wrote is not run.
func TestAServerWithoutCwdDoesNotReadFilesTheModelWroteInTheWorkspace(t *testing.T) {
	root := t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	modelWrites(t, root, ".envrc", "echo ran > '"+mark+"'\n")
	h := start(t, []Server{sourcingServer("s")}, Options{Dir: root})
	if f := h.set.Failures(); f != nil {
		t.Fatalf("the server did not start: %v", f)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("the .envrc the model wrote in the workspace ran when the server started")
	}
	out := h.call("s--cwd", `{}`)
	dir := out.Text
	if out.IsError || dir == root || strings.HasPrefix(dir, root+string(filepath.Separator)) {
		t.Fatalf("the server ran in %q (error %v), want a directory outside the workspace %s", dir, out.IsError, root)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("its directory %s: %v, mode %v, want one of the user's alone (0700)", dir, err, st.Mode())
	}
	h.set.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("its directory %s is left after the server was closed: %v", dir, err)
	}
}

// An entry that names its cwd runs there, the workspace included: that is
// the entry's own choice, shown when it is approved.
func TestAServerRunsInTheCwdItsEntryNames(t *testing.T) {
	root := t.TempDir()
	mark := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(root, ".envrc"), []byte("echo ran > '"+mark+"'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sourcingServer("s")
	s.Cwd = "."
	h := start(t, []Server{s}, Options{Dir: root})
	if f := h.set.Failures(); f != nil {
		t.Fatalf("the server did not start: %v", f)
	}
	if out := h.call("s--cwd", `{}`); out.IsError || out.Text != root {
		t.Errorf("the server ran in %q (error %v), want the workspace %s, which its entry names", out.Text, out.IsError, root)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the .envrc of the cwd the entry names was not read: %v", err)
	}
	if d := Describe(s); !strings.Contains(d, "(in . — in the workspace, whose files the model can write)") {
		t.Errorf("the approval line %q does not say the server runs in the workspace", d)
	}
}

// A command given as a path relative to the working directory (./srv.sh)
// cannot run without a cwd: the error says to give one.
func TestARelativeCommandWithoutCwdIsRefusedSayingWhy(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "srv.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := start(t, []Server{{Name: "rel", Type: "stdio", Command: "./srv.sh"}}, Options{Dir: root})
	f := h.set.Failures()
	if len(f) != 1 || !strings.Contains(f[0].Error(), `"./srv.sh" is a path relative to the working directory`) || !strings.Contains(f[0].Error(), `"cwd": "."`) {
		t.Errorf("got %v, want an error that says the command is relative and to give a cwd", f)
	}
}

// A server without cwd that exits before it answers (say, `python3
// server.py`, a file of the workspace) is told where it ran.
func TestAServerThatDiesWithoutCwdIsToldWhereItRan(t *testing.T) {
	root := t.TempDir()
	h := start(t, []Server{{Name: "gone", Type: "stdio", Command: "sh", Args: []string{"-c", "cat server.py"}}}, Options{Dir: root})
	f := h.set.Failures()
	if len(f) != 1 || !strings.Contains(f[0].Error(), "not in the workspace") || !strings.Contains(f[0].Error(), `"cwd"`) {
		t.Errorf("got %v, want an error that says where the server ran and names \"cwd\"", f)
	}
}
