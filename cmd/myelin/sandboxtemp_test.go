//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// sandboxTemps are the sandboxed commands' temp dirs in dir.
func sandboxTemps(t *testing.T, dir string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, "myelin-sandbox-*"))
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// Nothing myelin starts outlives it (contract §7), its sandboxed
// commands' temp dirs included: one left by a myelin killed with SIGKILL
// mid-command (its supervisor empties it but cannot remove it) is gone
// once the next myelin's sandboxed command has run, and that command's
// own is gone with it.
func TestASandboxTempDirLeftByAKilledMyelinIsGoneAfterTheNextCommand(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	tmp := t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp)
	call := func(command string) *exec.Cmd {
		in, _ := json.Marshal(map[string]string{"command": command})
		cmd := exec.Command(bin, "tool", "call", "shell--run", string(in), "--allow-shell", "--workspace", dir)
		cmd.Env = env
		return cmd
	}
	killed := call(`echo left > "$TMPDIR/left"; echo $$ > bash.pid; exec sleep 300`)
	var stderr strings.Builder
	killed.Stderr = &stderr
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	defer killed.Process.Kill()
	pidFile := filepath.Join(dir, "bash.pid")
	waitFor(t, "the command to write its pid", func() bool {
		data, err := os.ReadFile(pidFile)
		return err == nil && strings.HasSuffix(string(data), "\n")
	}, &stderr)
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	made := sandboxTemps(t, tmp)
	if len(made) != 1 {
		t.Fatalf("while the command runs %s holds %q, want its temp dir alone", tmp, made)
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	waitFor(t, "the command to end with myelin", func() bool { _, ok := liveProcs()[pid]; return !ok })
	// Its supervisor empties the temp dir, which stays: what is swept.
	waitFor(t, "the supervisor to empty the temp dir", func() bool {
		entries, err := os.ReadDir(made[0])
		return err == nil && len(entries) == 0
	})

	next := call(`true`)
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("the next command: %v\n%s", err, out)
	}
	if left := sandboxTemps(t, tmp); len(left) != 0 {
		t.Errorf("after the next command %s holds %q, want no sandbox temp dir", tmp, left)
	}
}
