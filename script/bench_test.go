package script

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

func benchConfig(b *testing.B) Config {
	reg := &tool.Registry{}
	if err := reg.Add(tool.MustFunc("t--nop", "Returns ok.", func(ctx context.Context, in struct{}) (any, error) { return "ok", nil })); err != nil {
		b.Fatal(err)
	}
	return Config{Tools: reg, Env: result.Env{}}
}

// BenchmarkToolRoundTrip is one tool call from a script and back: b.N
// sequential awaits in one script. Reported as calls per second.
func BenchmarkToolRoundTrip(b *testing.B) {
	c := benchConfig(b)
	code := fmt.Sprintf(`for (let i = 0; i < %d; i++) await tools["t--nop"]({}); return "done"`, b.N)
	cpu0 := cpuTime()
	b.ResetTimer()
	r := Run(context.Background(), c, Limits{ToolCalls: b.N + 1}, code)
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
	if r.IsError || r.Data != "done" {
		b.Fatalf("%v", r.Data)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkToolRoundTripAll is b.N tool calls from a script, ten at a
// time (Promise.all). Reported as calls per second.
func BenchmarkToolRoundTripAll(b *testing.B) {
	c := benchConfig(b)
	code := fmt.Sprintf(`const ten = Array.from({length: 10}); for (let i = 0; i < %d; i += 10) await Promise.all(ten.map(() => tools["t--nop"]({}))); return "done"`, b.N)
	cpu0 := cpuTime()
	b.ResetTimer()
	r := Run(context.Background(), c, Limits{ToolCalls: b.N + 10}, code)
	b.StopTimer()
	if r.IsError || r.Data != "done" {
		b.Fatalf("%v", r.Data)
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkToolRoundTripDirect is the same call through the dispatcher
// from Go, without a script: the baseline of the ratio.
func BenchmarkToolRoundTripDirect(b *testing.B) {
	c := benchConfig(b)
	d := &tool.Dispatcher{Tools: c.Tools}
	for b.Loop() {
		if out := d.Call(context.Background(), tool.Call{ID: "c", Name: "t--nop", Input: []byte(`{}`)}); out.Text != "ok" {
			b.Fatal(out.Text)
		}
	}
}

// BenchmarkStart is the start of a script of a conversation that ran one
// before: the engine kept for it, the sandbox, a script that returns at
// once.
func BenchmarkStart(b *testing.B) {
	c := benchConfig(b)
	c.Engines = NewPooledEngines(2, Pool{})
	b.Cleanup(c.Engines.Close)
	ctx := tool.WithConversation(context.Background(), "bench")
	for b.Loop() {
		if r := Run(ctx, c, Limits{}, `return 1`); r.IsError {
			b.Fatal(r.Data)
		}
	}
}

// BenchmarkStartAhead is the start of a conversation's first script: an
// engine started ahead, kept for the conversation once the script is over,
// and replaced in the background (not timed, nor are the last
// conversation's engine ended: a model's round comes between two
// scripts).
func BenchmarkStartAhead(b *testing.B) {
	c := benchConfig(b)
	c.Engines = NewPooledEngines(2, Pool{})
	b.Cleanup(c.Engines.Close)
	pl := c.Engines.pool
	ready := func() bool {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		if len(pl.idle) > 0 {
			return false
		}
		c.Engines.refillLocked()
		return len(pl.fresh) > 0
	}
	i := 0
	for b.Loop() {
		b.StopTimer()
		for !ready() {
			if s := c.Engines.evict(); s != nil {
				s.Free() // the last conversation's, so that one starts ahead
			}
			time.Sleep(time.Millisecond)
		}
		i++
		ctx := tool.WithConversation(context.Background(), fmt.Sprint("bench ", i))
		b.StartTimer()
		if r := Run(ctx, c, Limits{}, `return 1`); r.IsError {
			b.Fatal(r.Data)
		}
	}
}

// BenchmarkStartCold is the start of a script that finds no engine kept:
// one started for it (an Engines without a pool, as the package's own).
func BenchmarkStartCold(b *testing.B) {
	c := benchConfig(b)
	c.Engines = NewEngines(2)
	for b.Loop() {
		if r := Run(context.Background(), c, Limits{}, `return 1`); r.IsError {
			b.Fatal(r.Data)
		}
	}
}

// inProcess runs the engine on a goroutine of this process, over pipes,
// instead of a process of its own: the baseline of the benchmark pairs
// below, which measure what the process costs. It cannot stop a script
// that does not end by itself, so it is for benchmarks of scripts that do.
func inProcess(b *testing.B) {
	start := startEngine
	b.Cleanup(func() { startEngine = start })
	startEngine = func() (*conn, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			out := newOutbox(outW)
			defer out.stop()
			_ = serve(inR, out, nil)
			outW.Close()
		}()
		return &conn{
			w:    bufio.NewWriter(inW),
			r:    bufio.NewReader(outR),
			kill: func() { inW.Close(); outR.Close() },
			wait: func() string { <-done; return "" },
		}, nil
	}
}

// BenchmarkStartInProcess is the floor of BenchmarkStart: a runtime, the
// sandbox and the script, with no process at all.
func BenchmarkStartInProcess(b *testing.B) {
	inProcess(b)
	BenchmarkStartCold(b)
}

// BenchmarkToolRoundTripInProcess is the floor of BenchmarkToolRoundTrip
// without a process: the engine's work and myelin's, no pipe.
func BenchmarkToolRoundTripInProcess(b *testing.B) {
	inProcess(b)
	BenchmarkToolRoundTrip(b)
}

// BenchmarkToolRoundTripAllInProcess is BenchmarkToolRoundTripAll's.
func BenchmarkToolRoundTripAllInProcess(b *testing.B) {
	inProcess(b)
	BenchmarkToolRoundTripAll(b)
}

// cpuTime is the CPU this process and its reaped children used: an
// engine process's once Run has reaped it.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	d := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return d(self.Utime) + d(self.Stime) + d(children.Utime) + d(children.Stime)
}

// echoEnv makes the test binary, started again by
// BenchmarkPipeRoundTripFloor, a process that answers each message.
const echoEnv = "MYELIN_TEST_ECHO_HELPER"

// BenchmarkPipeRoundTripFloor is the floor of BenchmarkToolRoundTrip
// across processes: the same messages over the same pipes to a Go process
// of its own and back (a call's size one way, a result's the other), with
// no engine and no tool. What a round trip costs above it is the engine's
// work and myelin's.
func BenchmarkPipeRoundTripFloor(b *testing.B) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEchoesMessages$")
	cmd.Env = append(os.Environ(), echoEnv+"=1")
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer w.Close()
	bw, br := bufio.NewWriterSize(w, 64<<10), bufio.NewReaderSize(out, 64<<10)
	settle := msg{Op: opSettle, S: [3]string{"ok"}}
	round := func() {
		if err := writeMsg(bw, settle); err != nil {
			b.Fatal(err)
		}
		if m, err := readMsg(br); err != nil || m.Op != opCall {
			b.Fatalf("the echo answered op %q, %v", m.Op, err)
		}
	}
	round() // the helper has started
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		round()
	}
	b.StopTimer()
	w.Close()
	cmd.Wait()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// TestHelperEchoesMessages is the process of BenchmarkPipeRoundTripFloor:
// it reads messages as an engine does (its stdin blocking, buffered) and
// answers each with a call, until its stdin closes.
func TestHelperEchoesMessages(t *testing.T) {
	if os.Getenv(echoEnv) != "1" {
		t.Skip("the helper of BenchmarkPipeRoundTripFloor")
	}
	in, out := bufio.NewReaderSize(os.Stdin, 64<<10), bufio.NewWriterSize(os.Stdout, 64<<10)
	call := msg{Op: opCall, S: [3]string{"t--nop", "{}"}}
	for {
		if _, err := readMsg(in); err != nil {
			return
		}
		if err := writeMsg(out, call); err != nil {
			return
		}
	}
}

// BenchmarkEngineCall is the engine's own work for one tool call awaited
// from a script (the JavaScript, the bridge, the messages), with no pipe
// and no myelin: serve fed the script and b.N results from memory, its
// messages written to nowhere (one write at each wait).
func BenchmarkEngineCall(b *testing.B) {
	benchEngine(b, `for (let i = 0; i < %d; i++) await tools["t--nop"]({}); return "done"`, 1)
}

// BenchmarkEngineCallAll is BenchmarkEngineCall for calls started ten at
// a time (Promise.all).
func BenchmarkEngineCallAll(b *testing.B) {
	benchEngine(b, `const ten = Array.from({length: 10}); for (let i = 0; i < %d; i += 10) await Promise.all(ten.map(() => tools["t--nop"]({}))); return "done"`, 10)
}

func benchEngine(b *testing.B, code string, step int) {
	n := (b.N + step - 1) / step * step
	var in bytes.Buffer
	if err := writeMsg(&in, msg{Op: opRun, N: [4]int64{DefaultMemory, DefaultStack, 600_000, DefaultOutput}, S: [3]string{fmt.Sprintf(code, n), `["t--nop"]`}}); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := writeMsg(&in, msg{Op: opSettle, N: [4]int64{int64(i)}, S: [3]string{"ok", ""}}); err != nil {
			b.Fatal(err)
		}
	}
	out := newOutbox(io.Discard)
	defer out.stop()
	b.ResetTimer()
	if err := serve(&in, out, nil); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if in.Len() != 0 {
		b.Fatalf("the engine left %d bytes of results unread", in.Len())
	}
}
