//go:build linux

package sqlite

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// BenchmarkMarkedAfterRestart is what a mark saves a resume (issue 34
// point 4, slice 2; docs/performance.md "Slice 2: the SQLite store keeps
// a mark"): a stored conversation of 100,000 messages (BenchmarkReadAfter
// Restart's) marked at 99,000, with ~200 bytes of facts, read by a store
// just opened, side by side in every iteration (the writer's calls below
// add 400 messages an iteration: the mark is set again 1,000 before the
// end before each Marked):
//
//   - messages-ms, messages-cpu-ms: Store.Messages, the whole
//     conversation, as a resume read it before marks;
//   - marked-ms, marked-cpu-ms: Store.Marked, the mark and the 1,000
//     messages from it, as a resume reads it now;
//   - x-marked-paired: the median of marked-ms / messages-ms, each pair
//     taken in the same iteration (the steadier figure on a shared
//     machine).
//
// Then, in the store that read it, under a claim, the running writer's
// call at the start of every turn and before every request, each after
// one append of its own (so what is kept is the writer's own, whole):
//
//   - writer-messages-ns: Messages (as the agent reads today), on a store
//     that read the conversation whole;
//   - writer-marked-ns: Marked, on the store that read the tail.
//
// Run:
//
//	go test ./history/sqlite -run '^$' -bench MarkedAfterRestart -benchtime 10x
func BenchmarkMarkedAfterRestart(b *testing.B) {
	ctx := context.Background()
	path := b.TempDir() + "/h.db"
	const n, from = 100000, 99000
	storeRounds(b, path, "c", n)
	facts := bytes.Repeat([]byte("f"), 200)
	func() {
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if err := s.SetMark(ctx, "c", history.Mark{From: from, Facts: facts}); err != nil {
			b.Fatal(err)
		}
	}()
	open := func() *Store {
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	// perCall is the time of one of the writer's calls read, after one
	// append of its own, each of 200 times, the median
	perCall := func(s *Store, read func(ctx context.Context) int, want int) time.Duration {
		h, err := s.Claim(ctx, "c", history.NewHolder(), time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Release(ctx, "c", h)
		w := history.Writing(ctx, h)
		if got := read(w); got != want {
			b.Fatalf("the writer's first read: %d messages, want %d", got, want)
		}
		var ds []time.Duration
		for i := range 200 {
			if err := s.Append(history.Lazy(w), "c", userText("round")); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if got := read(w); got != want+i+1 {
				b.Fatalf("the writer's read %d: %d messages, want %d", i, got, want+i+1)
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	var wholes, marks, wholeCPUs, markCPUs, writerWholes, writerMarks []time.Duration
	total := n
	for b.Loop() {
		s := open()
		start, cpu := time.Now(), cpuTime()
		msgs, err := s.Messages(ctx, "c")
		if err != nil || len(msgs) != total {
			b.Fatal(len(msgs), err)
		}
		wholes, wholeCPUs = append(wholes, time.Since(start)), append(wholeCPUs, cpuTime()-cpu)
		writerWholes = append(writerWholes, perCall(s, func(w context.Context) int {
			msgs, err := s.Messages(w, "c")
			if err != nil {
				b.Fatal(err)
			}
			return len(msgs)
		}, total))
		total += 200
		s.Close()

		// the mark 1,000 messages before the end, as at the start
		s = open()
		if err := s.SetMark(ctx, "c", history.Mark{From: total - (n - from), Facts: facts}); err != nil {
			b.Fatal(err)
		}
		s.Close()
		s = open()
		start, cpu = time.Now(), cpuTime()
		m, tail, err := s.Marked(ctx, "c")
		if err != nil || len(tail) != n-from || m.From+len(tail) != total {
			b.Fatal(m.From, len(tail), err)
		}
		marks, markCPUs = append(marks, time.Since(start)), append(markCPUs, cpuTime()-cpu)
		writerMarks = append(writerMarks, perCall(s, func(w context.Context) int {
			m, tail, err := s.Marked(w, "c")
			if err != nil {
				b.Fatal(err)
			}
			return m.From + len(tail)
		}, total))
		total += 200
		s.Close()
	}
	ratio := make([]float64, len(marks))
	for i := range marks {
		ratio[i] = float64(marks[i]) / float64(wholes[i])
	}
	slices.Sort(ratio)
	b.ReportMetric(ratio[len(ratio)/2], "x-marked-paired")
	b.ReportMetric(medianMs(wholes), "messages-ms")
	b.ReportMetric(medianMs(marks), "marked-ms")
	b.ReportMetric(medianMs(wholeCPUs), "messages-cpu-ms")
	b.ReportMetric(medianMs(markCPUs), "marked-cpu-ms")
	b.ReportMetric(float64(medianNs(writerWholes)), "writer-messages-ns")
	b.ReportMetric(float64(medianNs(writerMarks)), "writer-marked-ns")
}

// medianNs is the median of ds in nanoseconds.
func medianNs(ds []time.Duration) int64 {
	slices.Sort(ds)
	return ds[len(ds)/2].Nanoseconds()
}
