package script

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"testing"

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
	b.ResetTimer()
	r := Run(context.Background(), c, Limits{ToolCalls: b.N + 1}, code)
	b.StopTimer()
	if r.IsError || r.Data != "done" {
		b.Fatalf("%v", r.Data)
	}
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

// BenchmarkStart is the cost of starting a script: a new engine, the
// sandbox, a script that returns at once.
func BenchmarkStart(b *testing.B) {
	c := benchConfig(b)
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
			_ = serve(inR, outW, nil)
			outW.Close()
		}()
		return &conn{
			w:    bufio.NewWriter(inW),
			r:    outR,
			kill: func() { inW.Close(); outR.Close() },
			wait: func() string { <-done; return "" },
		}, nil
	}
}

func BenchmarkStartInProcess(b *testing.B) {
	inProcess(b)
	BenchmarkStart(b)
}

func BenchmarkToolRoundTripInProcess(b *testing.B) {
	inProcess(b)
	BenchmarkToolRoundTrip(b)
}
