//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider/providertest"
)

// The scaling benchmark's load: conversations × turns per run, each turn
// one workspace--read round (two requests), the fake provider answering
// each request after scaleDelay, as a model takes its time; each worker
// process runs scaleSlots turns at once.
const (
	scaleConversations = 24
	scaleTurns         = 4
	scaleDelay         = 100 * time.Millisecond
	scaleSlots         = 2
	scaleRounds        = 3 // runs of each size, alternated
)

// TestScalingOfWorkers measures turns per second through the API with 1, 2
// and 4 `serve --worker` processes on one store (docs/performance.md), the
// sizes alternated scaleRounds times; it reports each size's median and
// its ratio to 1. It runs only when MYELIN_SCALE=1 (it takes minutes), and
// asserts nothing about time.
func TestScalingOfWorkers(t *testing.T) {
	if os.Getenv("MYELIN_SCALE") != "1" {
		t.Skip("set MYELIN_SCALE=1 to run the scaling benchmark")
	}
	bin := buildMyelin(t)
	srv := fakeAnthropic(t)
	srv.Respond = func(r providertest.Request) providertest.Step { return respondTurns(r, scaleDelay, false) }
	srv.Ready() // the requests come from the built binary
	sizes := []int{1, 2, 4}
	rates := map[int][]float64{}
	for round := range scaleRounds {
		for _, n := range sizes {
			rate := scaleRun(t, bin, n)
			rates[n] = append(rates[n], rate)
			t.Logf("round %d, %d worker(s): %.1f turns/s", round+1, n, rate)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	var b strings.Builder
	base := median(rates[1])
	for _, n := range sizes {
		fmt.Fprintf(&b, "| %d | %.1f | %.2f× |\n", n, median(rates[n]), median(rates[n])/base)
	}
	t.Logf("workers | turns/s (median of %d) | ratio to 1\n%sload average: %s", scaleRounds, b.String(), load)
}

// scaleRun runs the scaling load on n fresh worker processes sharing a
// fresh store and returns turns per second.
func scaleRun(t *testing.T, bin string, n int) float64 {
	t.Helper()
	procs, store, _, stop := startWorkerProcs(t, bin, n, scaleSlots)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	set := &workerSet{ctx: ctx, procs: procs}
	for _, p := range procs { // all listening before the clock starts
		for ctx.Err() == nil {
			if resp, err := workerClient.Get("http://" + p.addr + "/v1/tools"); err == nil {
				resp.Body.Close()
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var finished atomic.Int64
	start := time.Now()
	_, errs := runConversations(ctx, store, set.post, scaleConversations, scaleTurns, &finished)
	elapsed := time.Since(start)
	for _, err := range errs {
		t.Fatal(err)
	}
	return float64(finished.Load()) / elapsed.Seconds()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
