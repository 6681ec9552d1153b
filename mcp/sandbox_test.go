package mcp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/skipped"
	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/sandbox"
)

// An entry's sandbox settings are checked when the config is read: a
// mode that is not one, a sandbox for an HTTP server, settings that
// loosen a sandbox the entry does not ask for, a relative directory.
func TestAnEntrysSandboxSettingsAreCheckedWhenRead(t *testing.T) {
	for _, tt := range []struct{ entry, want string }{
		{`{"command":"srv","sandbox":"strict"}`, `"sandbox": "strict" is not a mode: give "workspace-write", "read-only" or "off"`},
		{`{"url":"https://x.example/mcp","sandbox":"read-only"}`, `"sandbox" is for stdio servers`},
		{`{"command":"srv","sandboxNetwork":true}`, `"sandboxNetwork" only loosen a sandbox, and the entry asks for none`},
		{`{"command":"srv","sandbox":"off","sandboxWrite":["/var/cache/srv"]}`, `"sandboxWrite" only loosen a sandbox`},
		{`{"command":"srv","sandbox":"read-only","sandboxWrite":["cache"]}`, `"sandboxWrite"[0] "cache": give an absolute path`},
	} {
		_, err := ParseConfig("m.json", []byte(`{"mcpServers":{"s":`+tt.entry+`}}`), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `server "s"`) {
			t.Errorf("%s: error %v, want one naming the server and %q", tt.entry, err, tt.want)
		}
	}
	lookup := func(k string) (string, bool) { return map[string]string{"HOME": "/home/u"}[k], k == "HOME" }
	servers, err := ParseConfig("m.json", []byte(`{"mcpServers":{"s":{"command":"srv","sandbox":"workspace-write","sandboxNetwork":true,"sandboxWrite":["${HOME}/.npm"]}}}`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if s := servers[0]; s.Sandbox != "workspace-write" || !s.SandboxNetwork || !slices.Equal(s.SandboxWrite, []string{"/home/u/.npm"}) {
		t.Errorf("read %+v", s)
	}
	// An unset variable in a directory is the server's problem, as in
	// any field, not the whole file's.
	servers, err = ParseConfig("m.json", []byte(`{"mcpServers":{"s":{"command":"srv","sandbox":"read-only","sandboxWrite":["${NOPE}/x"]}}}`), lookup)
	if err != nil || servers[0].Problem == "" {
		t.Errorf("an unset variable in sandboxWrite: error %v, problem %q", err, servers[0].Problem)
	}
}

// The policy a server runs under: its mode and network, its directories
// and the one it runs in writable, the variables its entry sets passed;
// none for an entry that asks for no sandbox.
func TestAServersSandboxPolicyIsWhatItsEntrySays(t *testing.T) {
	s := Server{Name: "s", Type: "stdio", Command: "srv", Sandbox: "read-only", SandboxWrite: []string{"/var/cache/srv"}, Env: map[string]string{"TOKEN": "t", "API_URL": "u"}}
	p, ok := s.SandboxPolicy("/tmp/myelin-mcp-s-1")
	want := sandbox.Policy{Mode: sandbox.ReadOnly, Writable: []string{"/var/cache/srv", "/tmp/myelin-mcp-s-1"}, Env: []string{"API_URL", "HOME", "PATH", "TOKEN"}}
	if !ok || p.Mode != want.Mode || p.Network || !slices.Equal(p.Writable, want.Writable) || !slices.Equal(p.Env, want.Env) {
		t.Errorf("policy %+v (%v), want %+v", p, ok, want)
	}
	for _, mode := range []string{"", "off"} {
		if p, ok := (Server{Type: "stdio", Command: "srv", Sandbox: mode}).SandboxPolicy(""); ok || p.Mode != sandbox.Off {
			t.Errorf("sandbox %q: policy %+v (%v), want none", mode, p, ok)
		}
	}
}

// The approval of a workspace's .mcp.json shows how each server is
// confined, when its entry asks for a sandbox.
func TestTheApprovalShowsAServersSandbox(t *testing.T) {
	for _, tt := range []struct {
		s    Server
		want string
	}{
		{Server{Name: "fs", Type: "stdio", Command: "srv", Sandbox: "workspace-write"}, "fs: srv (sandboxed: workspace-write, no network)"},
		{Server{Name: "web", Type: "stdio", Command: "srv", Sandbox: "read-only", SandboxNetwork: true, SandboxWrite: []string{"/home/u/.npm", "/a b"}}, `web: srv (sandboxed: read-only, with the network, writes /home/u/.npm, "/a b")`},
		{Server{Name: "plain", Type: "stdio", Command: "srv", Sandbox: "off"}, "plain: srv"},
	} {
		if got := Describe(tt.s); got != tt.want {
			t.Errorf("Describe = %q, want %q", got, tt.want)
		}
	}
}

// fileServer is a stdio MCP server in Python with two tools: read
// (a path's contents) and write (a path, created or replaced); an
// OSError is an error result saying what it was.
const fileServer = `import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m: continue
    r = {}
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "files", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in ("read", "write")]}
    elif m["method"] == "tools/call":
        a = m["params"]["arguments"]
        try:
            if m["params"]["name"] == "read":
                text = open(a["path"]).read()
            else:
                open(a["path"], "w").write("written by the server")
                text = "written"
            r = {"content": [{"type": "text", "text": text}]}
        except OSError as e:
            r = {"content": [{"type": "text", "text": str(e)}], "isError": True}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n"); sys.stdout.flush()
`

// A stdio server whose entry asks for a sandbox runs in it: it reads no
// secret of the home directory, writes neither the workspace (read-only)
// nor outside it, but writes the directory it runs in; the same server
// without the setting does all of it (so that the test can fail).
func TestAServerWhoseEntryAsksForASandboxRunsInIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox is Linux's")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		skipped.Need(t, "python3", "apt-get install python3")
	}
	home, outside, mods := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("the user's key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mods, "filesrv.py"), []byte(fileServer), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"read-only", ""} {
		t.Run("sandbox "+mode, func(t *testing.T) {
			root := t.TempDir()
			s := Server{Name: "files", Type: "stdio", Command: "python3", Args: []string{"-m", "filesrv"}, Env: map[string]string{"PYTHONPATH": mods}, Sandbox: mode}
			h := start(t, []Server{s}, Options{Dir: root})
			if f := h.set.Failures(); f != nil {
				t.Fatalf("the server did not start: %v", f)
			}
			confined := mode != ""
			for _, c := range []struct {
				tool, path string
				mayIn      bool // it works sandboxed
			}{
				{"read", key, false},
				{"write", filepath.Join(root, "in-workspace"), false},
				{"write", filepath.Join(outside, "outside"), false},
				{"write", "in-its-own-dir", true},
			} {
				in, _ := json.Marshal(map[string]string{"path": c.path})
				out := h.call("files--"+c.tool, string(in))
				if want := !confined || c.mayIn; out.IsError == want {
					t.Errorf("%s %s: error %v (%q), want it to work: %v", c.tool, c.path, out.IsError, out.Text, want)
				}
			}
		})
	}
}

// Where no sandbox is to be had, a server whose entry asks for one does
// not start, and the error names the setting that would run it
// unconfined; the other servers start.
func TestAServerThatAsksForASandboxWhereThereIsNoneDoesNotStart(t *testing.T) {
	defer sandbox.ForceUnavailable("this test says so")()
	cmd, env := mcptest.Command()
	h := start(t, []Server{
		{Name: "boxed", Type: "stdio", Command: cmd, Env: env, Sandbox: "workspace-write"},
		{Name: "plain", Type: "stdio", Command: cmd, Env: env},
	}, Options{})
	f := h.set.Failures()
	if len(f) != 1 || !strings.Contains(f[0].Error(), "MCP server boxed did not start") || !strings.Contains(f[0].Error(), sandbox.ErrUnavailable.Error()) || !strings.Contains(f[0].Error(), `give it "sandbox": "off" to run it unconfined`) {
		t.Errorf("failures %v, want boxed's alone, refused for want of a sandbox and naming \"sandbox\": \"off\"", f)
	}
}
