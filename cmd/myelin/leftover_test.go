//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/myelin-run/myelin/mcp/mcptest"
)

// Nothing myelin starts outlives it (contract §7), a stdio MCP server's
// directory of its own included: the one a myelin killed with SIGKILL
// leaves (its server wrote files and a directory in it) is gone once the
// next myelin has started a server without "cwd" and exited, and that
// server's own is gone with it.
func TestAServerDirLeftByAKilledMyelinIsGoneAfterTheNextServersStart(t *testing.T) {
	bin := buildMyelin(t)
	tmp := t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp)
	serverDirs := func() []string {
		t.Helper()
		found, err := filepath.Glob(filepath.Join(tmp, "myelin-mcp-*"))
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	exe, serverEnv := mcptest.Command()
	config := func(t *testing.T, server map[string]any) string {
		t.Helper()
		data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"s": server}})
		p := filepath.Join(t.TempDir(), "servers.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A server that writes in its directory, then never answers and
	// ignores SIGTERM: myelin, waiting on its start, is killed.
	dir := t.TempDir()
	stubbornEnv := maps.Clone(serverEnv)
	maps.Copy(stubbornEnv, mcptest.Stubborn(filepath.Join(dir, "pids"), true))
	killed := exec.Command(bin, "mcp", "list", "--workspace", dir, "--mcp-config", config(t, map[string]any{
		"command": "sh",
		"args":    []string{"-c", `echo state > written && mkdir sub && echo more > sub/f && exec "$0"`, exe},
		"env":     stubbornEnv,
	}))
	killed.Env = env
	var stderr strings.Builder
	killed.Stderr = &stderr
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	defer killed.Process.Kill()
	waitFor(t, "the server to start", func() bool { return exists(filepath.Join(dir, "pids")) }, &stderr)
	data, _ := os.ReadFile(filepath.Join(dir, "pids"))
	server, _ := strconv.Atoi(strings.Fields(string(data) + " 0")[0])
	pgid, err := syscall.Getpgid(server)
	if err != nil {
		t.Fatalf("the server %d: %v", server, err)
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	waitFor(t, fmt.Sprintf("the server's process group %d to end", pgid), func() bool { return len(groupMembers(pgid)) == 0 })
	left := serverDirs()
	if len(left) != 1 || !exists(filepath.Join(left[0], "sub", "f")) {
		t.Fatalf("after the kill %s holds %q, want the server's directory with what it wrote", tmp, left)
	}

	// The next myelin, with a server that answers.
	next := exec.Command(bin, "mcp", "list", "--workspace", t.TempDir(), "--mcp-config", config(t, map[string]any{"command": exe, "env": serverEnv}))
	next.Env = env
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("the next myelin: %v\n%s", err, out)
	}
	if got := serverDirs(); len(got) != 0 {
		t.Errorf("after the next myelin %s holds %q, want nothing", tmp, got)
	}
}
