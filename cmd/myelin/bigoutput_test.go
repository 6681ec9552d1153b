package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A 200 MB output goes from the command's file to the spill file without
// passing through memory: the built binary's peak resident size stays under
// 100 MB, the spill file holds every byte, and what is printed is the head
// with the ready call for the next page (issue 9 §1).
func TestABigOutputNeverGoesThroughMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 200 MB")
	}
	bin := buildMyelin(t)
	dir := t.TempDir()
	const size = 200_000_000
	cmd := exec.Command(bin, "tool", "call", "shell--run",
		`{"command":"yes abcdefghijklmnopqrstuvwxy | head -c `+strconv.Itoa(size)+`"}`,
		"--allow-shell", "--workspace", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024 // KiB on Linux
	t.Logf("peak resident size: %.1f MB", float64(peak)/1e6)
	if peak >= 100_000_000 {
		t.Errorf("peak resident size %d bytes, want under 100 MB", peak)
	}
	text := stdout.String()
	if !strings.HasPrefix(text, strings.Repeat("abcdefghijklmnopqrstuvwxy\n", 100)) {
		t.Fatalf("the text does not start with the output's head: %.200q", text)
	}
	m := regexp.MustCompile(`Read on: workspace--read \{"path":"([^"]+)","offset":\d+\}`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no ready call in %q", text[max(0, len(text)-600):])
	}
	st, err := os.Stat(filepath.Join(dir, m[1]))
	if err != nil || st.Size() != size {
		t.Fatalf("spill file %s: %v, %d bytes, want %d", m[1], err, st.Size(), size)
	}
	if !strings.Contains(text, "this result is 200000000 characters in 7692308 lines") {
		t.Fatalf("the notice does not count the whole output: %q", text[max(0, len(text)-600):])
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, ".myelin", "shell")); len(entries) != 0 {
		t.Fatalf("output files left behind: %v", entries)
	}
}

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
