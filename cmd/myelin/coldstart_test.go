//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkColdStart times a fresh process of myelin from its start to its
// exit (issue 34, point 2; docs/performance.md "Cold start"): `myelin
// version`, `myelin tool list` and the script engine's own start (the
// binary run again with MYELIN_SCRIPT_ENGINE=1, given an empty stdin: it
// runs its warm-up script, says it is ready and ends), each beside a Go hello world built in the same run, the
// floor. With MYELIN_COLDSTART_BEFORE=PATH it runs that binary too (an
// older build) for a before/after. Every iteration runs each program once,
// in turn, so all see the same load; each reports, per program, the median
// wall time (NAME-ms), the median CPU time, user and system (NAME-cpu-ms:
// on a loaded machine the steadier figure), and, from a few more runs, the
// median peak resident set size (NAME-rss-MiB) and the anonymous part of
// the resident set at exit (NAME-anon-MiB: the rest is the executable's
// pages, page cache shared by every process of it, and how much of the
// file a fault maps depends on how the file came into the page cache). It
// is a benchmark: it asserts nothing about time.
//
//	MYELIN_COLDSTART_BEFORE=/path/to/old/myelin \
//	go test ./cmd/myelin -run '^$' -bench ColdStart -benchtime 40x
func BenchmarkColdStart(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	hello := filepath.Join(dir, "hello.built")
	if out, err := exec.Command("go", "build", "-o", hello, src).CombinedOutput(); err != nil {
		b.Fatalf("building the hello world: %v\n%s", err, out)
	}
	built := filepath.Join(dir, "myelin.built")
	if out, err := exec.Command("go", "build", "-o", built, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	bins := map[string]string{"hello": copyBinary(b, hello, filepath.Join(dir, "hello")), "now": copyBinary(b, built, filepath.Join(dir, "now"))}
	if before := os.Getenv("MYELIN_COLDSTART_BEFORE"); before != "" {
		bins["before"] = copyBinary(b, before, filepath.Join(dir, "before"))
	}
	ws := b.TempDir()
	for _, c := range []struct {
		name string
		args []string
		env  string
		exit int
	}{
		{"version", []string{"version"}, "", 0},
		{"tool-list", []string{"tool", "list", "--workspace", ws, "--allow-shell"}, "", 0},
		// runs its warm-up script, says it is ready, and ends at its
		// stdin's end (script/child.go engineMain)
		{"engine", nil, "MYELIN_SCRIPT_ENGINE=1", 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			var progs []program
			for _, name := range []string{"hello", "now", "before"} {
				if path, ok := bins[name]; ok {
					p := program{name: name, path: path, args: c.args, exit: c.exit}
					if name == "hello" {
						p.args, p.exit = nil, 0
					}
					if c.env != "" {
						p.env = append(os.Environ(), c.env)
					}
					progs = append(progs, p)
				}
			}
			startMany(b, progs)
		})
	}
}

// program is one command the benchmark starts, and the status it must
// exit with.
type program struct {
	name, path string
	args, env  []string
	exit       int
}

// copyBinary copies the executable src to dst, so that every binary
// compared came into the page cache the one way: how it did (the linker's
// writes, one large write, cp) changes how much of the file the kernel
// maps at each fault, and so the peak RSS, by tens of MiB for one binary.
func copyBinary(b *testing.B, src, dst string) string {
	b.Helper()
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 128<<10) // cp's size of a write
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				b.Fatal(err)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return dst
}

// startMany runs each of progs once an iteration, in turn, b.N times, its
// stdin empty and its output kept for a failure's message, and reports
// for each the median wall and CPU times; then, in a few more runs, the
// median of its peak and anonymous RSS (rssOf). A run that does not exit
// with its status stops the benchmark with its output.
func startMany(b *testing.B, progs []program) {
	walls := make([][]float64, len(progs))
	cpus := make([][]float64, len(progs))
	b.ResetTimer()
	for range b.N {
		for i, p := range progs {
			cmd := exec.Command(p.path, p.args...)
			cmd.Env = p.env
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			walls[i] = append(walls[i], float64(time.Since(start).Microseconds())/1000)
			cpus[i] = append(cpus[i], float64((cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()).Microseconds())/1000)
			if code := cmd.ProcessState.ExitCode(); code != p.exit {
				b.Fatalf("%s %s: exit %d (%v), want %d\n%s", p.name, strings.Join(p.args, " "), code, err, p.exit, out.String())
			}
		}
	}
	b.StopTimer()
	for i, p := range progs {
		b.ReportMetric(median(walls[i]), p.name+"-ms")
		b.ReportMetric(median(cpus[i]), p.name+"-cpu-ms")
		var peak, anon []float64
		for range 7 {
			hwm, a, err := rssOf(p)
			if err != nil {
				b.Fatalf("%s %s: %v", p.name, strings.Join(p.args, " "), err)
			}
			peak, anon = append(peak, float64(hwm)/1024), append(anon, float64(a)/1024)
		}
		b.ReportMetric(median(peak), p.name+"-rss-MiB")
		b.ReportMetric(median(anon), p.name+"-anon-MiB")
	}
}

// rssOf runs p once under ptrace and returns its peak resident set size
// (VmHWM) and its anonymous resident memory (RssAnon), in KiB, read as it
// exits. rusage's ru_maxrss cannot say the peak: Linux carries into a
// child's the peak of the process it was forked from (here this test
// binary, tens of MiB), so every small program would read as large as the
// benchmark itself.
func rssOf(p program) (peak, anon int, err error) {
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	peak, anon, _, err = traced(cmd)
	return peak, anon, err
}

// traced runs cmd to its end under ptrace and returns its peak resident
// set size (VmHWM) and anonymous resident memory (RssAnon), in KiB, read
// as it exits, and its wait status (rssOf says why not rusage). cmd's
// Stdout and Stderr, when set, must be *os.File: nothing copies output,
// as the process is reaped here, not by cmd.Wait.
func traced(cmd *exec.Cmd) (peak, anon int, ws syscall.WaitStatus, err error) {
	runtime.LockOSThread() // ptrace requests come from the thread that traced
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return 0, 0, ws, err
	}
	pid := cmd.Process.Pid
	defer func() {
		if err != nil && !ws.Exited() && !ws.Signaled() {
			// stopped under ptrace when something failed: kill and reap it
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
		_ = cmd.Process.Release()
	}()
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil { // stopped at its exec
		return 0, 0, ws, err
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT); err != nil {
		return 0, 0, ws, fmt.Errorf("ptrace: %w", err)
	}
	peak, anon = -1, -1
	for sig := 0; ; {
		if err := syscall.PtraceCont(pid, sig); err != nil {
			return 0, 0, ws, fmt.Errorf("ptrace: %w", err)
		}
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return 0, 0, ws, err
		}
		switch {
		case ws.Exited() || ws.Signaled():
			if peak < 0 || anon < 0 {
				return 0, 0, ws, fmt.Errorf("no VmHWM and RssAnon read at its exit")
			}
			return peak, anon, ws, nil
		case ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				return 0, 0, ws, err
			}
			for line := range strings.Lines(string(status)) {
				for key, to := range map[string]*int{"VmHWM:": &peak, "RssAnon:": &anon} {
					if v, ok := strings.CutPrefix(line, key); ok {
						if *to, err = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB")); err != nil {
							return 0, 0, ws, fmt.Errorf("%s %q: %w", key, v, err)
						}
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

// TestVersionRunsNoGarbageCollection holds `myelin version` to no GC
// cycle from its start to its exit (GODEBUG=gctrace=1 prints one line a
// cycle): the inits' heap stays below the first goal once internal/startgc
// puts the collector off until main. A cycle here means the inits now
// allocate past the runtime's first heap goal of 4 MB: the state some
// package builds at init should move to its first use.
func TestVersionRunsNoGarbageCollection(t *testing.T) {
	cmd := exec.Command(buildMyelin(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=") })
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("myelin version: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "gc ") {
			t.Errorf("myelin version ran a GC cycle: %s", line)
		}
	}
}
