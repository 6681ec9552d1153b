package workspace

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
)

func benchLog(size int) string {
	var b strings.Builder
	b.Grow(size + 200)
	for i := 0; b.Len() < size; i++ {
		level := "INFO"
		if i%97 == 0 {
			level = "ERROR"
		}
		fmt.Fprintf(&b, "2026-12-02T10:%02d:%02d %s worker-%d request id=%d took %dms\n", i/60%60, i%60, level, i%7, i, i%500)
	}
	return b.String()
}

// BenchmarkSpill64MB compares spilling a 64 MB result (conversion, cap,
// spill file, head and notice) with os.WriteFile of the same bytes
// (target: ≤ 1.5×). Run:
//
//	go test ./workspace -run '^$' -bench Spill64MB -count 5
func BenchmarkSpill64MB(b *testing.B) {
	text := benchLog(64 << 20)
	dir := b.TempDir()
	ws, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	b.Run("os.WriteFile", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		p := filepath.Join(dir, "plain.txt")
		for b.Loop() {
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
			os.Remove(p)
		}
	})
	b.Run("result-spill", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			out := result.One(result.Call{ID: "bench", Result: result.Result{Data: text}}, result.Env{Store: ws})
			if out.SpillPath == "" {
				b.Fatal("did not spill")
			}
			os.Remove(filepath.Join(dir, out.SpillPath))
		}
	})
}

// BenchmarkGrep100MB compares workspace--grep over a 100 MB file with
// `grep -n` on the same file, both counting every matching line (target:
// ≤ 1.5×). Each iteration runs both, one after the other, so that the load
// of a shared machine falls on both alike; it reports the median time of
// each (grep-ms, ws-ms) and the median of the iterations' ratios (ratio),
// and the same for the CPU time each took (grep's process and this one's
// reading its output; this process while it greps), which a loaded
// machine moves less.
// Run:
//
//	go test ./workspace -run '^$' -bench Grep100MB -benchtime 7x
func BenchmarkGrep100MB(b *testing.B) {
	if _, err := exec.LookPath("grep"); err != nil {
		b.Skip("grep is not installed")
	}
	ws, dir := bigLogWorkspace(b)
	for _, bc := range []struct{ name, pattern, grepFlags, grepPattern string }{
		{"literal", "ERROR", "-nE", "ERROR"},
		{"regex", `ERROR worker-3 .* took 4[0-9]ms`, "-nE", `ERROR worker-3 .* took 4[0-9]ms`},
		{"no-literal-prefix", `[A-Z]+ worker-3 request id=[0-9]*7 `, "-nE", `[A-Z]+ worker-3 request id=[0-9]*7 `},
		{"case-insensitive", `(?i)error worker-3`, "-niE", `error worker-3`},
		{"no-literal-dense", `[0-9]{3}ms`, "-nE", `[0-9]{3}ms`},
		{"no-literal-sparse", `^\S+ E\w+ w`, "-nE", `^\S+ E\w+ w`},
		{"no-literal-at-all", `[A-Z]{5} \w+-[35] `, "-nE", `[A-Z]{5} \w+-[35] `},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var grepT, wsT, ratio, grepCPU, wsCPU, cpuRatio []float64
			for b.Loop() {
				c0 := cpuTime(b)
				t0 := time.Now()
				cmd := exec.Command("grep", bc.grepFlags, bc.grepPattern, "big.log")
				cmd.Dir = dir
				cmd.Stdout = io.Discard // a pipe: grep stops at the first match when its output is /dev/null
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				c1 := cpuTime(b)
				r, err := ws.Grep(context.Background(), GrepInput{Pattern: bc.pattern, Path: "big.log"}, result.DefaultCap)
				if err != nil || r.Structured.(*GrepReport).Total == 0 {
					b.Fatal(err)
				}
				t2 := time.Now()
				c2 := cpuTime(b)
				gc := c1 - c0 + (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
				grepCPU, wsCPU = append(grepCPU, gc*1e3), append(wsCPU, (c2-c1)*1e3)
				cpuRatio = append(cpuRatio, (c2-c1)/gc)
				grepT, wsT = append(grepT, t1.Sub(t0).Seconds()*1e3), append(wsT, t2.Sub(t1).Seconds()*1e3)
				ratio = append(ratio, t2.Sub(t1).Seconds()/t1.Sub(t0).Seconds())
			}
			b.ReportMetric(median(grepT), "grep-ms")
			b.ReportMetric(median(wsT), "ws-ms")
			b.ReportMetric(median(ratio), "ratio")
			b.ReportMetric(median(grepCPU), "grep-cpu-ms")
			b.ReportMetric(median(wsCPU), "ws-cpu-ms")
			b.ReportMetric(median(cpuRatio), "cpu-ratio")
		})
	}
}

// cpuTime is the CPU time this process has taken, user and system, in
// seconds.
func cpuTime(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// BenchmarkRead100MB compares a first page of workspace--read on a 100 MB
// file, which reads the whole file once for the footer's totals, with
// os.ReadFile of the same file (target: ≤ 1.5×). Run:
//
//	go test ./workspace -run '^$' -bench Read100MB -count 6
func BenchmarkRead100MB(b *testing.B) {
	ws, dir := bigLogWorkspace(b)
	b.Run("os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(filepath.Join(dir, "big.log")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("workspace-read", func(b *testing.B) {
		for b.Loop() {
			if _, err := ws.Read(ReadInput{Path: "big.log"}, result.DefaultCap); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSaveSmall compares saving a 4 KB spill file (with the checks of
// myelin's own directories: no link at .myelin or .myelin/tool-results)
// with os.WriteFile of the same bytes into a directory known to exist
// (target: ≤ 3×; the checks are two Lstat and an os.Root). Run:
//
//	go test ./workspace -run '^$' -bench SaveSmall -count 6
func BenchmarkSaveSmall(b *testing.B) {
	data := benchLog(4096)
	b.Run("os.WriteFile", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			p := filepath.Join(dir, "x.txt")
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
			os.Remove(p)
		}
	})
	b.Run("Save", func(b *testing.B) {
		ws, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		for b.Loop() {
			p, err := ws.Save("x.txt", data)
			if err != nil {
				b.Fatal(err)
			}
			ws.root.Remove(p)
		}
	})
}

// BenchmarkLogWrite is a line written to a capped Log (trace.log, an MCP
// server's log) against the same line written to an *os.File opened for
// appending (target: ≤ 1.2×). Run:
//
//	go test ./workspace -run '^$' -bench LogWrite -count 6
func BenchmarkLogWrite(b *testing.B) {
	line := []byte("2026-12-03T10:00:00Z script_0123abcd workspace--read input=16B ms=2 error=false\n")
	b.Run("os.File", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "trace.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for b.Loop() {
			f.Write(line)
		}
	})
	b.Run("Log", func(b *testing.B) {
		l, err := OpenLog(b.TempDir(), ".myelin/logs/trace.log", 10<<20)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		for b.Loop() {
			l.Write(line)
		}
	})
}

// bigLogWorkspace is a workspace holding big.log, 100 MB of benchLog, for
// the grep and read benchmarks; it is closed when the benchmark ends.
func bigLogWorkspace(b *testing.B) (*Workspace, string) {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.log"), []byte(benchLog(100<<20)), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	return ws, dir
}

// BenchmarkGrepStart is what grep's matcher costs before its first line:
// regexp.Compile alone (what grep paid before the lineDFA), against it
// with the lineDFA made and one line matched (the start state and the
// states that line needs). Run:
//
//	go test ./workspace -run '^$' -bench GrepStart -benchmem
func BenchmarkGrepStart(b *testing.B) {
	const pattern = `[A-Z]+ worker-3 request id=[0-9]*7 `
	line := []byte("2026-12-02T10:00:01 INFO worker-3 request id=127 took 12ms")
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			if !regexp.MustCompile(pattern).Match(line) {
				b.Fatal("no match")
			}
		}
	})
	b.Run("regexp+lineDFA", func(b *testing.B) {
		for b.Loop() {
			regexp.MustCompile(pattern)
			d, err := newLineDFA(mustParse(b, pattern))
			if err != nil {
				b.Fatal(err)
			}
			if m, _ := d.match(line); !m {
				b.Fatal("no match")
			}
		}
	})
}
