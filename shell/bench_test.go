package shell

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// bigCommand writes 200 MB of short lines.
const bigCommand = "yes abcdefghijklmnopqrstuvwxy | head -c 200000000"

// BenchmarkBigOutput200MB sets shell--run, through the dispatcher and the
// conversion into a spill file, beside its floor: bash writing the same
// output to a file. Each iteration runs both, one after the other, so that
// the machine's load weighs on both alike; the metrics are each one's mean
// and fastest time and the ratios of the means and of the fastest runs
// (docs/performance.md).
func BenchmarkBigOutput200MB(b *testing.B) {
	dir := b.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	reg := &tool.Registry{}
	if err := reg.Add(ToolWithPolicy(dir, testPolicy)); err != nil {
		b.Fatal(err)
	}
	d := &tool.Dispatcher{Tools: reg, Env: result.Env{Store: ws}}
	input, _ := json.Marshal(Input{Command: bigCommand})
	floorFile := filepath.Join(dir, "floor.out")
	var floor, myelin time.Duration
	minFloor, minMyelin := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for b.Loop() {
		start := time.Now()
		if err := exec.Command("bash", "-c", bigCommand+" > "+floorFile).Run(); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		floor += took
		minFloor = min(minFloor, took)
		start = time.Now()
		out := d.Call(context.Background(), tool.Call{ID: "big", Name: "shell--run", Input: input})
		took = time.Since(start)
		myelin += took
		minMyelin = min(minMyelin, took)
		if out.SpillPath == "" || out.Chars != 200_000_000 {
			b.Fatalf("got %d characters, spill %q", out.Chars, out.SpillPath)
		}
		b.StopTimer()
		os.Remove(floorFile)
		os.Remove(filepath.Join(dir, out.SpillPath))
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(floor.Seconds()*1e3/n, "floor-ms/op")
	b.ReportMetric(myelin.Seconds()*1e3/n, "shell-run-ms/op")
	b.ReportMetric(myelin.Seconds()/floor.Seconds(), "ratio")
	// the fastest run of each is the one the machine's load disturbed least
	b.ReportMetric(minFloor.Seconds()*1e3, "floor-fastest-ms")
	b.ReportMetric(minMyelin.Seconds()*1e3, "shell-run-fastest-ms")
	b.ReportMetric(minMyelin.Seconds()/minFloor.Seconds(), "ratio-of-fastest")
}
