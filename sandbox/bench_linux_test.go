package sandbox_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/child"
	"github.com/myelin-run/myelin/internal/supervisor"
	"github.com/myelin-run/myelin/sandbox"
)

// BenchmarkCommandCost sets the cost of one `bash -c true` side by side:
// started plainly (the floor), under its supervisor (package child, as
// with --sandbox off), sandboxed with no network (the default) and
// sandboxed with the network. Each iteration runs all four one after the
// other, so that the machine's load weighs on each alike; the metrics are
// each one's mean and fastest time and CPU time (this process's and its
// children's), and what the sandbox adds to the supervised command
// (docs/performance.md).
func BenchmarkCommandCost(b *testing.B) {
	if supervisor.LandlockABI() < 1 {
		b.Skip("the kernel offers no Landlock")
	}
	ws := b.TempDir()
	if err := os.MkdirAll(ws+"/.git", 0o755); err != nil {
		b.Fatal(err)
	}
	supervised := func(p sandbox.Policy) {
		cmd := exec.Command("bash", "-c", "true")
		cmd.Dir = ws
		if err := p.Apply(cmd, ws); err != nil {
			b.Fatal(err)
		}
		g, err := child.Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		err = g.Wait()
		g.Kill()
		if err != nil {
			b.Fatal(err)
		}
	}
	ways := []struct {
		name string
		run  func()
	}{
		{"floor", func() {
			cmd := exec.Command("bash", "-c", "true")
			cmd.Dir = ws
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}},
		{"supervised", func() { supervised(sandbox.Policy{Mode: sandbox.Off}) }},
		{"sandboxed", func() { supervised(sandbox.Policy{}) }},
		{"sandboxed-network", func() { supervised(sandbox.Policy{Network: true}) }},
	}
	total := make([]time.Duration, len(ways))
	cpu := make([]time.Duration, len(ways))
	fastest := make([]time.Duration, len(ways))
	for i := range fastest {
		fastest[i] = time.Hour
	}
	for b.Loop() {
		for i, w := range ways {
			c0 := cpuTime()
			start := time.Now()
			w.run()
			took := time.Since(start)
			cpu[i] += cpuTime() - c0
			total[i] += took
			fastest[i] = min(fastest[i], took)
		}
	}
	n := float64(b.N)
	for i, w := range ways {
		b.ReportMetric(total[i].Seconds()*1e3/n, w.name+"-ms")
		b.ReportMetric(fastest[i].Seconds()*1e3, w.name+"-fastest-ms")
		b.ReportMetric(cpu[i].Seconds()*1e3/n, w.name+"-cpu-ms")
	}
	b.ReportMetric((total[2]-total[1]).Seconds()*1e3/n, "added-by-sandbox-ms")
	b.ReportMetric((fastest[2]-fastest[1]).Seconds()*1e3, "added-by-sandbox-fastest-ms")
	b.ReportMetric((cpu[2]-cpu[1]).Seconds()*1e3/n, "added-by-sandbox-cpu-ms")
}

// cpuTime is the CPU time (user and system) of this process and of its
// children that were waited for: what a command cost the machine,
// whatever else runs on it.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	d := func(tv syscall.Timeval) time.Duration { return time.Duration(tv.Nano()) }
	return d(self.Utime) + d(self.Stime) + d(kids.Utime) + d(kids.Stime)
}
