package mcp

import (
	"slices"
	"strings"
	"testing"

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
