package script

import (
	"context"
	"fmt"
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
