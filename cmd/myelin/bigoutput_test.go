package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A myelin killed while its command runs leaves the command's output file
// in .myelin/shell/, and nowhere else; the next start removes it once no
// process holds it (issue 9 §1).
func TestTheNextStartCleansTheOutputACrashLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary")
	}
	bin := buildMyelin(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "tool", "call", "shell--run", `{"command":"echo $$ > pid; echo started; sleep 60"}`, "--allow-shell", "--workspace", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pid")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if raw, err := os.ReadFile(pidFile); err == nil && bytes.HasSuffix(raw, []byte("\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	outputs, _ := filepath.Glob(filepath.Join(dir, ".myelin", "shell", "*.out"))
	if len(outputs) != 1 {
		t.Fatalf("output files after the crash: %v", outputs)
	}
	if raw, _ := os.ReadFile(outputs[0]); string(raw) != "started\n" {
		t.Fatalf("the output file holds %q", raw)
	}
	// the command's process group outlives myelin here unless myelin's
	// children die with it; either way, it is gone before the next start
	raw, _ := os.ReadFile(pidFile)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 1 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	for !unlocked(outputs[0]) {
		if time.Now().After(deadline) {
			t.Fatal("the killed command still holds its output file")
		}
		time.Sleep(20 * time.Millisecond)
	}
	next := exec.Command(bin, "tool", "call", "shell--run", `{"command":"echo again"}`, "--allow-shell", "--workspace", dir)
	if out, err := next.CombinedOutput(); err != nil || string(out) != "again\n" {
		t.Fatalf("next start: %v, %q", err, out)
	}
	if _, err := os.Stat(outputs[0]); !os.IsNotExist(err) {
		t.Fatalf("the output the crash left is still there: %v", err)
	}
}

// unlocked reports whether no process holds the flock of the file at p.
func unlocked(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return true
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
