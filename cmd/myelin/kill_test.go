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
	"time"

	"github.com/myelin-run/myelin/mcp/mcptest"
)

// Nothing myelin starts outlives it (contract §7), even when myelin is killed
// with SIGKILL and no code of its own runs: a shell--run command and what
// it started stop — in its process group or out of it (setsid, a double
// fork: issue 26 §7) — and `sleep 3; touch f` never touches f.
func TestAShellCommandDiesWithMyelinKilledBySIGKILL(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	// Each process writes its pid once it is where it should be: out of
	// the group, for the two that call setsid.
	command := `setsid bash -c 'echo $$ > setsid.pid; exec sleep 300' & ` +
		`(setsid bash -c 'echo $$ > double.pid; exec sleep 300' &) & ` +
		`sleep 300 & echo $! > background.pid; echo $$ > bash.pid; sleep 3; touch f`
	in, _ := json.Marshal(map[string]string{"command": command})
	cmd := exec.Command(bin, "tool", "call", "shell--run", string(in), "--allow-shell", "--workspace", dir)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // what the killed myelin leaves there, under the test's
	var stderr strings.Builder
	cmd.Stderr = &stderr
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	names := []string{"bash", "background", "setsid", "double"}
	waitFor(t, "the command and what it started to write their pids", func() bool {
		for _, n := range names {
			if data, err := os.ReadFile(filepath.Join(dir, n+".pid")); err != nil || !strings.HasSuffix(string(data), "\n") {
				return false
			}
		}
		return true
	}, &stderr)
	pids := map[string]int{}
	for _, n := range names {
		data, _ := os.ReadFile(filepath.Join(dir, n+".pid"))
		pids[n], _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	live := liveProcs()
	bash, ok := live[pids["bash"]]
	if !ok {
		t.Fatalf("bash %d is not running", pids["bash"])
	}
	for _, n := range []string{"setsid", "double"} {
		if p, ok := live[pids[n]]; !ok || p.pgid == bash.pgid {
			t.Fatalf("the %s sleep %d is not running out of bash's group %d: %+v", n, pids[n], bash.pgid, p)
		}
	}
	time.Sleep(time.Until(started.Add(500 * time.Millisecond)))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()
	for _, n := range names {
		pid := pids[n]
		waitFor(t, fmt.Sprintf("the %s process %d to end", n, pid), func() bool { _, ok := liveProcs()[pid]; return !ok })
	}
	time.Sleep(time.Until(killed.Add(4 * time.Second)))
	if _, err := os.Stat(filepath.Join(dir, "f")); err == nil {
		t.Error("f was touched after myelin was killed")
	}
	if left := groupMembers(bash.pgid); len(left) > 0 {
		t.Errorf("processes of the command's group outlived myelin: %v", left)
	}
}

// A stdio MCP server that ignores the end of its stdin and SIGTERM, and
// the child it started, die with myelin killed by SIGKILL, whether myelin
// was waiting on its start (`mcp list`) or on a call (`tool call`).
func TestAStubbornMCPServerDiesWithMyelinKilledBySIGKILL(t *testing.T) {
	bin := buildMyelin(t)
	tests := []struct {
		name string
		mute bool // the server never answers: myelin waits on its start
		args func(dir string) []string
		// ready is the file that shows myelin is where it should be killed.
		ready string
	}{
		{"mcp list, waiting on the server's start", true,
			func(string) []string { return []string{"mcp", "list"} }, "pids"},
		{"tool call, in the middle of the call", false,
			func(dir string) []string {
				in, _ := json.Marshal(map[string]any{"ms": 60000, "mark": filepath.Join(dir, "called")})
				return []string{"tool", "call", "stubborn--slow", string(in)}
			}, "called"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			exe, env := mcptest.Command()
			maps.Copy(env, mcptest.Stubborn(filepath.Join(dir, "pids"), tt.mute))
			config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"stubborn": map[string]any{"command": exe, "env": env}}})
			// Given with --mcp-config, which needs no approval.
			configFile := filepath.Join(t.TempDir(), "servers.json")
			if err := os.WriteFile(configFile, config, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, append(tt.args(dir), "--workspace", dir, "--mcp-config", configFile)...)
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // the server's own dir, left by the killed myelin, under the test's
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitFor(t, "the server to be "+tt.ready, func() bool { return exists(filepath.Join(dir, "pids")) && exists(filepath.Join(dir, tt.ready)) }, &stderr)
			data, err := os.ReadFile(filepath.Join(dir, "pids"))
			if err != nil {
				t.Fatal(err)
			}
			var pids []int
			for _, f := range strings.Fields(string(data)) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
			server, ok := liveProcs()[pids[0]]
			if !ok || len(pids) != 2 {
				t.Fatalf("the server's pids %q: not running", data)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			waitFor(t, fmt.Sprintf("the server's process group %d to end", server.pgid), func() bool { return len(groupMembers(server.pgid)) == 0 })
			live := liveProcs()
			for _, pid := range pids {
				if p, ok := live[pid]; ok {
					t.Errorf("%d (%s) outlived myelin", pid, p.comm)
				}
			}
		})
	}
}

// liveProc is a live process, as /proc/PID/stat shows it.
type liveProc struct {
	pid, ppid, pgid int
	comm            string
}

// liveProcs are the live processes (a zombie, dead but not reaped by whoever
// inherited it, is not live).
func liveProcs() map[int]liveProc {
	out := map[int]liveProc{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:]) // state ppid pgrp ...
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		p := liveProc{comm: s[open+1 : end]}
		p.pid, _ = strconv.Atoi(strings.TrimSpace(s[:open]))
		p.ppid, _ = strconv.Atoi(fields[1])
		p.pgid, _ = strconv.Atoi(fields[2])
		out[p.pid] = p
	}
	return out
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []string {
	var in []string
	for _, p := range liveProcs() {
		if p.pgid == pgid {
			in = append(in, fmt.Sprintf("%d (%s)", p.pid, p.comm))
		}
	}
	return in
}
