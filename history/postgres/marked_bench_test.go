//go:build unix

package postgres_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/storetest"
)

// BenchmarkMarkedAfterRestart reads a stored conversation of 100,000
// messages marked at 99,000 (1 KB of facts) — a long conversation whose
// older part was summarised — from stores just opened, side by side in
// every iteration:
//
//   - marked-ms: Store.Marked of a store just opened (the mark and the
//     rows from 99,000 on: what a worker resuming it reads);
//   - messages-ms: Store.Messages of a store just opened (every row:
//     what it read before marks);
//   - x-messages-paired: the median of marked-ms / messages-ms, each
//     pair taken in the same iteration;
//   - warm-marked-ms, warm-messages-ms: then, in twenty rounds of two
//     messages appended by another store, Marked of the store that read
//     marked and Messages of the one that read whole (each reads the
//     rows added since, and Marked the mark with them), each first in
//     every other round: what a worker pays before each request;
//     x-warm-paired, the median of their ratio, round by round;
//   - marked-cpu-ms, messages-cpu-ms: this process's CPU time of the
//     fresh reads.
//
// Each figure is the median of the iterations. Run:
//
//	eval "$(.ci/postgres start)"
//	go test ./history/postgres -run '^$' -bench MarkedAfterRestart -benchtime 5x
func BenchmarkMarkedAfterRestart(b *testing.B) {
	const n, from = 100000, 99000
	ctx := context.Background()
	name, _ := pgtest.Schema(b)
	dsn := pgtest.DSN(b)
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn, postgres.Options{Schema: name})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	w := open()
	defer w.Close()
	storeRounds(b, w, "c", n)
	facts := bytes.Repeat([]byte("f"), 1024)
	if err := w.SetMark(ctx, "c", history.Mark{From: from, Facts: facts}); err != nil {
		b.Fatal(err)
	}
	var marked, whole, markedCPU, wholeCPU, warmMarked, warmWhole []time.Duration
	var paired, warmPaired []float64
	for b.Loop() {
		sm, sw := open(), open()
		start, cpu := time.Now(), cpuTime()
		m, tail, err := sm.Marked(ctx, "c")
		d, dc := time.Since(start), cpuTime()-cpu
		total, _ := w.Get(ctx, "c")
		if err != nil || m.From != from || len(tail) != total.Messages-from {
			b.Fatalf("Marked: from %d, %d messages, %v; want from %d, %d", m.From, len(tail), err, from, total.Messages-from)
		}
		start, cpu = time.Now(), cpuTime()
		all, err := sw.Messages(ctx, "c")
		dw, dwc := time.Since(start), cpuTime()-cpu
		if err != nil || len(all) != total.Messages {
			b.Fatalf("Messages: %d messages, %v; want %d", len(all), err, total.Messages)
		}
		marked, whole = append(marked, d), append(whole, dw)
		markedCPU, wholeCPU = append(markedCPU, dc), append(wholeCPU, dwc)
		paired = append(paired, float64(d)/float64(dw))

		// twenty rounds: two messages appended by another store, then
		// both read, each first in every other round (the first read
		// after an append pays for something the second does not)
		for round := range 20 {
			if err := w.Append(ctx, "c", storetest.UserText("a"), storetest.UserText("b")); err != nil {
				b.Fatal(err)
			}
			want := total.Messages + 2*(round+1)
			for i := range 2 {
				start := time.Now()
				if (i+round)%2 == 0 {
					_, tail, err := sm.Marked(ctx, "c")
					warmMarked = append(warmMarked, time.Since(start))
					if err != nil || len(tail) != want-from {
						b.Fatalf("a warm Marked: %d messages, %v; want %d", len(tail), err, want-from)
					}
				} else {
					all, err := sw.Messages(ctx, "c")
					warmWhole = append(warmWhole, time.Since(start))
					if err != nil || len(all) != want {
						b.Fatalf("a warm Messages: %d messages, %v; want %d", len(all), err, want)
					}
				}
			}
			warmPaired = append(warmPaired, float64(warmMarked[len(warmMarked)-1])/float64(warmWhole[len(warmWhole)-1]))
		}
		sm.Close()
		sw.Close()
	}
	ms := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / 1e6
	}
	slices.Sort(paired)
	b.ReportMetric(ms(marked), "marked-ms")
	b.ReportMetric(ms(whole), "messages-ms")
	b.ReportMetric(paired[len(paired)/2], "x-messages-paired")
	slices.Sort(warmPaired)
	b.ReportMetric(ms(warmMarked), "warm-marked-ms")
	b.ReportMetric(ms(warmWhole), "warm-messages-ms")
	b.ReportMetric(warmPaired[len(warmPaired)/2], "x-warm-paired")
	b.ReportMetric(ms(markedCPU), "marked-cpu-ms")
	b.ReportMetric(ms(wholeCPU), "messages-cpu-ms")
}
