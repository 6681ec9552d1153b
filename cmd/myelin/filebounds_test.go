//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// maxFileToolRSS is the peak resident size the file tools may reach on a
// file of any size (issue 10 §5: grep on a 1 GiB sparse file peaked at
// 4.9 GB, read at 1.07 GB).
const maxFileToolRSS = 150 << 20

// gibFile makes a 1 GiB file in a new workspace: sparse (all NUL bytes) or
// one line of text without a newline.
func gibFile(t *testing.T, sparse bool) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if sparse {
		if err := f.Truncate(1 << 30); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	block := bytes.Repeat([]byte("one long line of text, no newline; "), (1<<20)/35+1)[:1<<20]
	for i := 0; i < 1<<10; i++ {
		if _, err := f.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runBounded runs the built binary and returns its stdout, its stderr
// and its peak resident size in bytes, read under ptrace as it exits
// (traced): rusage's ru_maxrss would carry the test binary's own peak
// into it (a test that had read a large file made every later child's
// read 192 MiB). code is its exit status (-1 when killed by a signal).
func runBounded(t *testing.T, bin string, args ...string) (stdout, stderr string, code int, peak int64) {
	t.Helper()
	dir := t.TempDir()
	var files [2]*os.File
	for i := range files {
		f, err := os.CreateTemp(dir, "out")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = files[0], files[1]
	hwm, _, ws, err := traced(cmd)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS) {
		t.Skipf("a child's peak memory is read under ptrace, which this system refuses: %v", err)
	}
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	var out [2]string
	for i, f := range files {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out[0], out[1], ws.ExitStatus(), int64(hwm) << 10
}

// workspace--grep and workspace--read stay within a fixed memory bound
// whatever a file holds: a 1 GiB sparse file is binary from its first
// block, a 1 GiB line is read past, not held.
func TestFileToolsStayWithinAMemoryBoundOnGiBFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1 GiB file; not in -short")
	}
	bin := buildMyelin(t)
	sparse, long := gibFile(t, true), gibFile(t, false)
	for _, tc := range []struct {
		name, dir, tool, args, say string
	}{
		{"grep, sparse", sparse, "workspace--grep", `{"pattern":"x"}`, "big (binary)"},
		{"read, sparse", sparse, "workspace--read", `{"path":"big"}`, "big is a binary file (1073741824 bytes)"},
		{"grep, one long line", long, "workspace--grep", `{"pattern":"x"}`, "1 lines longer than 1 MiB were searched in their first 1 MiB only (the first: big:1)"},
		{"read, one long line", long, "workspace--read", `{"path":"big"}`, "line 1 of 1 in big is longer than a page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, _, rss := runBounded(t, bin, "tool", "call", tc.tool, tc.args, "--workspace", tc.dir, "--no-code-execution")
			out := stdout + stderr
			if !strings.Contains(out, tc.say) {
				t.Errorf("output %.500q does not say %q", out, tc.say)
			}
			t.Logf("peak resident size %d MiB", rss>>20)
			if rss > maxFileToolRSS {
				t.Errorf("peak resident size %d MiB, over %d MiB", rss>>20, maxFileToolRSS>>20)
			}
		})
	}
}

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
	text, errText, code, peak := runBounded(t, bin, "tool", "call", "shell--run",
		`{"command":"yes abcdefghijklmnopqrstuvwxy | head -c `+strconv.Itoa(size)+`"}`,
		"--allow-shell", "--workspace", dir)
	t.Logf("peak resident size: %.1f MB", float64(peak)/1e6)
	if peak >= 100_000_000 {
		t.Errorf("peak resident size %d bytes, want under 100 MB", peak)
	}
	if code != 0 || errText != "" {
		t.Fatalf("exit %d, stderr: %s", code, errText)
	}
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
