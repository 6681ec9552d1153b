//go:build linux

package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// BenchmarkMarkedKeptFacts is what a store that read a conversation's
// mark pays at its next Marked after another opening appended to the
// conversation (a takeover: two processes taking turns, issue 34 point 4
// slice 3's pack in the mark's facts; docs/performance.md "A mark kept
// between reads"): a conversation of 100,000 messages marked at 99,000
// with 22 MB of facts, read by a second store (not the writer), side by
// side in every iteration:
//
//   - append-ms: the writer's store's Append of one message (not waiting
//     for the disk, history.Lazy), which reads the mark's place and
//     checksum;
//   - marked-ms: the reader's Store.Marked;
//   - cold-marked-ms: Store.Marked of a store just opened (the mark's
//     facts and the 1,000 rows from it, read and checked);
//   - facts-ms: the mark's facts alone read on the reader's connection
//     (SELECT facts), what Marked read of the mark before it kept them;
//   - tail-columns-ms: the mark's columns stored after its facts (crc,
//     row_crc), without the facts;
//   - head-columns-ms: its place and length(facts), stored before them;
//   - readfile-ms, the floor: os.ReadFile of a file of 22 MB.
//
// Each figure is the median of the iterations. Run:
//
//	go test ./history/sqlite -run '^$' -bench MarkedKeptFacts -benchtime 20x
func BenchmarkMarkedKeptFacts(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	path := filepath.Join(dir, "h.db")
	const n, from, size = 100000, 99000, 22 << 20
	storeRounds(b, path, "c", n)
	facts := make([]byte, size)
	for i := range facts {
		facts[i] = byte(i * 7919 >> 3)
	}
	file := filepath.Join(dir, "facts")
	if err := os.WriteFile(file, facts, 0o600); err != nil {
		b.Fatal(err)
	}
	w, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if err := w.SetMark(ctx, "c", history.Mark{From: from, Facts: facts}); err != nil {
		b.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if m, _, err := r.Marked(ctx, "c"); err != nil || len(m.Facts) != size {
		b.Fatal(len(m.Facts), err)
	}
	timed := func(into *[]time.Duration, fn func()) {
		start := time.Now()
		fn()
		*into = append(*into, time.Since(start))
	}
	var appended, marked, cold, whole, tail, head, floor []time.Duration
	total := n
	for b.Loop() {
		timed(&appended, func() {
			if err := w.Append(history.Lazy(ctx), "c", userText("round")); err != nil {
				b.Fatal(err)
			}
		})
		total++
		timed(&marked, func() {
			m, msgs, err := r.Marked(ctx, "c")
			if err != nil || len(m.Facts) != size || m.From+len(msgs) != total {
				b.Fatal(m.From, len(msgs), len(m.Facts), err)
			}
		})
		fresh, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		timed(&cold, func() {
			m, msgs, err := fresh.Marked(ctx, "c")
			if err != nil || len(m.Facts) != size || m.From+len(msgs) != total {
				b.Fatal(m.From, len(msgs), len(m.Facts), err)
			}
		})
		fresh.Close()
		timed(&whole, func() {
			var got []byte
			if err := r.db.QueryRowContext(ctx, `SELECT facts FROM marks WHERE conversation = ?`, "c").Scan(&got); err != nil || len(got) != size {
				b.Fatal(len(got), err)
			}
		})
		timed(&tail, func() {
			var crc, row int64
			if err := r.db.QueryRowContext(ctx, `SELECT crc, row_crc FROM marks WHERE conversation = ?`, "c").Scan(&crc, &row); err != nil {
				b.Fatal(err)
			}
		})
		timed(&head, func() {
			var at, length int64
			if err := r.db.QueryRowContext(ctx, `SELECT start, length(facts) FROM marks WHERE conversation = ?`, "c").Scan(&at, &length); err != nil || length != size {
				b.Fatal(length, err)
			}
		})
		timed(&floor, func() {
			got, err := os.ReadFile(file)
			if err != nil || len(got) != size {
				b.Fatal(len(got), err)
			}
		})
	}
	b.ReportMetric(medianMs(appended), "append-ms")
	b.ReportMetric(medianMs(marked), "marked-ms")
	b.ReportMetric(medianMs(cold), "cold-marked-ms")
	b.ReportMetric(medianMs(whole), "facts-ms")
	b.ReportMetric(medianMs(tail), "tail-columns-ms")
	b.ReportMetric(medianMs(head), "head-columns-ms")
	b.ReportMetric(medianMs(floor), "readfile-ms")
}

// BenchmarkSetMarkOfAPack is what the agent's SetMark of a pack costs
// (issue 34 point 4 slice 3: the view's messages packed into the mark's
// facts, written at a turn's end): new facts of 1, 10 and 22 MB set at
// every iteration on a conversation of 1,000 messages, not waiting for
// the disk (as SetMark never does), side by side with its floor,
// os.WriteFile of the same bytes to a file of its own (setmark-ms,
// writefile-ms: medians). Run:
//
//	go test ./history/sqlite -run '^$' -bench SetMarkOfAPack -benchtime 10x
func BenchmarkSetMarkOfAPack(b *testing.B) {
	ctx := context.Background()
	for _, mb := range []int{1, 10, 22} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			path := markedStore(b, 1000, 0)
			s := openStore(b, path)
			file := filepath.Join(b.TempDir(), "facts")
			facts := make([][]byte, 2)
			for i := range facts {
				facts[i] = bytes.Repeat([]byte{byte('a' + i), 1, 2, 3}, mb<<18)
			}
			var sets, writes []time.Duration
			for n := 0; b.Loop(); n++ {
				f := facts[n%2]
				start := time.Now()
				if err := s.SetMark(ctx, "c", history.Mark{From: 1000, Facts: f}); err != nil {
					b.Fatal(err)
				}
				sets = append(sets, time.Since(start))
				start = time.Now()
				if err := os.WriteFile(file, f, 0o600); err != nil {
					b.Fatal(err)
				}
				writes = append(writes, time.Since(start))
			}
			b.ReportMetric(medianMs(sets), "setmark-ms")
			b.ReportMetric(medianMs(writes), "writefile-ms")
		})
	}
}
