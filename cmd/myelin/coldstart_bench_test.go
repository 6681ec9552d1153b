package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkColdStart times a fresh process of myelin from its start to its
// exit (issue 34, point 2; docs/performance.md "Cold start"): `myelin
// version`, `myelin tool list` and the script engine's own start (the
// binary run again with MYELIN_SCRIPT_ENGINE=1, given an empty stdin so it
// ends at once), side by side with a Go hello world built in the same run
// as the floor. Each reports the median wall time (ms-median), the median
// CPU time (ms-cpu-median) and the median peak resident set size
// (MiB-peak-rss). With MYELIN_COLDSTART_BEFORE=PATH it runs that binary too (an
// older build), for a before/after in one run. It is a benchmark: it
// asserts nothing about time.
//
//	go test ./cmd/myelin -run '^$' -bench ColdStart -benchtime 40x
func BenchmarkColdStart(b *testing.B) {
	dir := b.TempDir()
	hello := filepath.Join(dir, "hello")
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", hello, src).CombinedOutput(); err != nil {
		b.Fatalf("building the hello world: %v\n%s", err, out)
	}
	bins := []struct{ name, path string }{{"now", copyBinary(b, buildMyelinBench(b, dir), filepath.Join(dir, "now"))}}
	if before := os.Getenv("MYELIN_COLDSTART_BEFORE"); before != "" {
		bins = append(bins, struct{ name, path string }{"before", copyBinary(b, before, filepath.Join(dir, "before"))})
	}
	ws := b.TempDir()
	hello = copyBinary(b, hello, filepath.Join(dir, "hello-copy"))
	b.Run("floor=hello", func(b *testing.B) { startMany(b, exec.Command(hello), 0) })
	for _, bin := range bins {
		b.Run("bin="+bin.name+"/version", func(b *testing.B) { startMany(b, exec.Command(bin.path, "version"), 0) })
		b.Run("bin="+bin.name+"/tool-list", func(b *testing.B) {
			startMany(b, exec.Command(bin.path, "tool", "list", "--workspace", ws, "--allow-shell"), 0)
		})
		b.Run("bin="+bin.name+"/engine", func(b *testing.B) {
			cmd := exec.Command(bin.path)
			cmd.Env = append(os.Environ(), "MYELIN_SCRIPT_ENGINE=1")
			startMany(b, cmd, 1) // "reading the script: EOF"
		})
	}
}

// buildMyelinBench builds this command into dir once for the benchmark.
func buildMyelinBench(b *testing.B, dir string) string {
	b.Helper()
	bin := filepath.Join(dir, "myelin")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// copyBinary copies the executable src to dst, written the one way for
// every binary compared: how a file came into the page cache (the
// linker's writes, cp's) changes how much of it the kernel maps at each
// fault, and so the peak RSS, by as much as 10 MiB between two copies of
// one binary.
func copyBinary(b *testing.B, src, dst string) string {
	b.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		b.Fatal(err)
	}
	return dst
}

// startMany runs template's command b.N times, one process after the
// other, its stdin empty and its output discarded, and reports the median
// wall time of a run and the median CPU time it used (user and system: on
// a machine other work loads, the steadier of the two); then, in a few more runs, the median of its peak
// RSS (rssOf). A run that does not exit with status want stops the
// benchmark with its output.
func startMany(b *testing.B, template *exec.Cmd, want int) {
	walls := make([]float64, 0, b.N)
	cpus := make([]float64, 0, b.N)
	b.ResetTimer()
	for range b.N {
		cmd := exec.Command(template.Path, template.Args[1:]...)
		cmd.Env = template.Env
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		walls = append(walls, float64(time.Since(start).Microseconds())/1000)
		cpus = append(cpus, float64((cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()).Microseconds())/1000)
		if code := cmd.ProcessState.ExitCode(); code != want {
			b.Fatalf("%s: exit %d (%v), want %d\n%s", strings.Join(template.Args, " "), code, err, want, out.String())
		}
	}
	b.StopTimer()
	b.ReportMetric(median(walls), "ms-median")
	b.ReportMetric(median(cpus), "ms-cpu-median")
	rss := make([]float64, 0, 7)
	for range cap(rss) {
		kib, err := rssOf(template)
		if err != nil {
			b.Fatalf("%s: %v", strings.Join(template.Args, " "), err)
		}
		rss = append(rss, float64(kib)/1024)
	}
	b.ReportMetric(median(rss), "MiB-peak-rss")
}

// rssOf runs template's command once under ptrace and returns its peak
// resident set size (VmHWM, KiB) read as it exits. rusage's ru_maxrss
// cannot say it: Linux carries into a child's the peak of the process it
// was forked from (here this test binary, tens of MiB), so every small
// program would read as large as the benchmark itself.
func rssOf(template *exec.Cmd) (int, error) {
	runtime.LockOSThread() // ptrace requests come from the thread that traced
	defer runtime.UnlockOSThread()
	cmd := exec.Command(template.Path, template.Args[1:]...)
	cmd.Env = template.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Process.Release()
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil { // stopped at its exec
		return 0, err
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT); err != nil {
		return 0, fmt.Errorf("ptrace: %w", err)
	}
	kib := -1
	for sig := 0; ; {
		if err := syscall.PtraceCont(pid, sig); err != nil {
			return 0, fmt.Errorf("ptrace: %w", err)
		}
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return 0, err
		}
		switch {
		case ws.Exited() || ws.Signaled():
			if kib < 0 {
				return 0, fmt.Errorf("it ended without the exit stop")
			}
			return kib, nil
		case ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				return 0, err
			}
			for line := range strings.Lines(string(status)) {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					kib, err = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
					if err != nil {
						return 0, fmt.Errorf("VmHWM %q: %w", v, err)
					}
				}
			}
			sig = 0
		default: // a signal stop: deliver the signal
			sig = int(ws.StopSignal())
		}
	}
}

// initAllocBound is the most a package of this module may allocate in its
// init: a small table, not a compiled regexp, an encoded image or a schema
// built by reflection, which belong at their first use (issue 34).
const initAllocBound = 16 << 10

// TestNoPackageOfOursBuildsStateAtInit holds every package of this module
// linked into myelin to an init that allocates at most initAllocBound, as
// GODEBUG=inittrace=1 reports it for `myelin version`: every command, and
// every script engine, runs every init before main.
func TestNoPackageOfOursBuildsStateAtInit(t *testing.T) {
	cmd := exec.Command(buildMyelin(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("myelin version: %v\n%s", err, out)
	}
	seen := 0
	for line := range strings.Lines(string(out)) {
		// init PACKAGE @T ms, T ms clock, BYTES bytes, N allocs
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[2][0] != '@' {
			continue
		}
		if pkg := f[1]; pkg == "main" || strings.HasPrefix(pkg, "github.com/myelin-run/myelin/") {
			seen++
			bytes, err := strconv.Atoi(f[7])
			if err != nil || f[8] != "bytes," {
				t.Fatalf("unreadable inittrace line %q", line)
			}
			if bytes > initAllocBound {
				t.Errorf("package %s allocates %d bytes in its init (bound %d): make that state at its first use (sync.OnceValue)", pkg, bytes, initAllocBound)
			}
		}
	}
	if seen == 0 {
		t.Fatalf("no init of this module's packages in the inittrace of myelin version:\n%s", out)
	}
}
