package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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

// runBounded runs the built binary and returns its stdout and peak
// resident size in bytes.
func runBounded(t *testing.T, bin string, args ...string) (string, int64) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("%v: %v", args, err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage on this system")
	}
	return out.String() + errOut.String(), int64(ru.Maxrss) << 10 // Linux reports KiB
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
			out, rss := runBounded(t, bin, "tool", "call", tc.tool, tc.args, "--workspace", tc.dir, "--no-code-execution")
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
