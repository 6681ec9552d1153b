package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseConfigReadsTheStandardFormatAndExpandsVariables(t *testing.T) {
	data, err := os.ReadFile("testdata/mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	servers, err := ParseConfig("mcp.json", data, env(map[string]string{"FS_TOKEN": "t0k", "API_TOKEN": "abc"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 || servers[0].Name != "filesystem" || servers[1].Name != "remote" {
		t.Fatalf("servers %+v", servers)
	}
	fs, remote := servers[0], servers[1]
	if !fs.Stdio() || fs.Args[2] != "." || fs.Env["TOKEN"] != "t0k" || fs.CallTimeout() != DefaultCallTimeout {
		t.Fatalf("filesystem %+v", fs)
	}
	if fs.Rerun != nil {
		t.Fatalf("filesystem's rerun = %v; want unset, its tools' annotations deciding", *fs.Rerun)
	}
	if remote.Type != "http" || remote.Headers["Authorization"] != "Bearer abc" || remote.CallTimeout() != 30*time.Second || remote.Rerun == nil || *remote.Rerun {
		t.Fatalf("remote %+v", remote)
	}
}

func TestParseConfigErrorsNameTheServerAndTheField(t *testing.T) {
	for doc, want := range map[string]string{
		`{"mcpServers":{"a":{}}}`:                               `server "a": no "command" or "url"`,
		`{"mcpServers":{"a":{"command":"x","url":"http://h"}}}`: `server "a": give "command"`,
		`{"mcpServers":{"a":{"type":"sse","url":"http://h"}}}`:  `"sse"`,
		`{"mcpServers":{"a":{"type":"ws","url":"http://h"}}}`:   `type "ws" is not a transport`,
		`{"mcpServers":{"a":{"command":"x","timeout":-1}}}`:     `"timeout" must be positive`,
		`{"mcpServers":{"a":{"command":"x","rerun":"yes"}}}`:    `server "a": json: cannot unmarshal string into Go struct field Server.rerun of type bool`,
		`{"servers":{}}`:                     `no "mcpServers" object`,
		`not json`:                           `not an mcpServers document`,
		`{"mcpServers":{"a":{"command":5}}}`: `server "a"`,
	} {
		_, err := ParseConfig("c.json", []byte(doc), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "c.json: ") {
			t.Errorf("%s: err = %v, want it to say %q", doc, err, want)
		}
	}
}

func TestAnUnsetVariableKeepsOnlyItsServerFromStarting(t *testing.T) {
	servers, err := ParseConfig("c.json", []byte(`{"mcpServers":{"a":{"command":"x","env":{"K":"${MISSING}"}},"b":{"command":"y"}}}`), env(nil))
	if err != nil || len(servers) != 2 {
		t.Fatalf("%v %v", servers, err)
	}
	if want := "c.json: env.K uses ${MISSING}, which is not set"; !strings.HasPrefix(servers[0].Problem, want) || servers[1].Problem != "" {
		t.Fatalf("problems %q %q, want %q on a only", servers[0].Problem, servers[1].Problem, want)
	}
	set := Start(context.Background(), servers[:1], Options{Dir: t.TempDir()})
	defer set.Close()
	if f := set.Failures(); len(f) != 1 || !strings.Contains(f[0].Error(), "MCP server a did not start, its tools are left out: c.json: env.K uses ${MISSING}") {
		t.Errorf("failures %v", f)
	}
}

func TestAServerGetsOnlyTheVariablesItsEntryNamesPlusPathAndHome(t *testing.T) {
	s := Server{Env: map[string]string{"TOKEN": "x", "PATH": "/custom"}}
	got := s.Environ(env(map[string]string{"PATH": "/usr/bin", "HOME": "/root", "ANTHROPIC_API_KEY": "secret"}))
	if strings.Join(got, " ") != "HOME=/root PATH=/custom TOKEN=x" {
		t.Fatalf("environ %q", got)
	}
}

func TestLoadConfigMergesFilesAndSkipsAMissingWorkspaceFile(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	b := filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte(`{"mcpServers":{"x":{"command":"one"},"y":{"command":"y"}}}`), 0o644)
	os.WriteFile(b, []byte(`{"mcpServers":{"x":{"command":"two"}}}`), 0o644)
	servers, err := LoadConfig([]ConfigFile{{Path: filepath.Join(dir, ".mcp.json"), Optional: true}, {Path: a}, {Path: b}}, env(nil))
	if err != nil || len(servers) != 2 || servers[0].Command != "two" || servers[1].Name != "y" {
		t.Fatalf("servers %+v, %v", servers, err)
	}
	if _, err := LoadConfig([]ConfigFile{{Path: filepath.Join(dir, "nope.json")}}, env(nil)); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Fatalf("err = %v", err)
	}
}

func TestToolNamesAreSafeBoundedAndStable(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5)
	refs := []ToolRef{
		{"everything", "echo"},
		{"my server", "get.thing"},
		{"my_server", "get_thing"}, // the same safe name as the one above
		{"everything", long},
		{"everything", long + "2"},
	}
	names := ToolNames(refs)
	seen := map[string]bool{}
	for _, r := range refs {
		n := names[r]
		if len(n) > 64 || seen[n] || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Fatalf("%v → %q (seen %v)", r, n, seen[n])
		}
		seen[n] = true
	}
	if names[refs[0]] != "everything--echo" || names[refs[1]] != "my_server--get_thing" || !strings.HasPrefix(names[refs[2]], "my_server--get_thing-") {
		t.Fatalf("names %v", names)
	}
	// the same names whatever order the tools are listed in
	reversed := []ToolRef{refs[4], refs[3], refs[2], refs[1], refs[0]}
	again := ToolNames(reversed)
	for _, r := range refs {
		if again[r] != names[r] {
			t.Fatalf("%v: %q then %q", r, names[r], again[r])
		}
	}
}
