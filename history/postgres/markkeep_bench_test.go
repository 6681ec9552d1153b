//go:build unix

package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/storetest"
)

// BenchmarkMarkedKeptFacts is what a store that read a conversation's
// mark pays at its next Marked after another store appended to the
// conversation (a worker given a conversation back; issue 34 point 4
// slice 3's pack in the mark's facts; docs/performance.md "A mark kept
// between reads"): a conversation of 100,000 messages marked at 99,000
// with 22 MB of facts, side by side in every iteration:
//
//   - append-ms: the writer's Append of one message;
//   - kept-marked-ms: Marked of the store that read the mark (its
//     stamp unchanged: the facts are not sent, markedKnown);
//   - cold-marked-ms: Marked of a store just opened (the mark's facts
//     and the 1,000 rows from it);
//   - facts-ms: the mark's facts alone, SELECT facts on a connection of
//     its own (what a read that sends them pays for them);
//   - columns-ms: the mark's other columns alone ("from", stamp, crc);
//   - readfile-ms, the floor: os.ReadFile of a file of 22 MB.
//
// Each figure is the median of the iterations. Run:
//
//	eval "$(.ci/postgres start)"
//	go test ./history/postgres -run '^$' -bench MarkedKeptFacts -benchtime 10x
func BenchmarkMarkedKeptFacts(b *testing.B) {
	const n, from, size = 100000, 99000, 22 << 20
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
	facts := make([]byte, size)
	for i := range facts {
		facts[i] = byte(i * 7919 >> 3)
	}
	file := filepath.Join(b.TempDir(), "facts")
	if err := os.WriteFile(file, facts, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := w.SetMark(ctx, "c", history.Mark{From: from, Facts: facts}); err != nil {
		b.Fatal(err)
	}
	r := open()
	defer r.Close()
	if m, _, err := r.Marked(ctx, "c"); err != nil || len(m.Facts) != size {
		b.Fatal(len(m.Facts), err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	table := pgx.Identifier{name, "conversation_marks"}.Sanitize()
	timed := func(into *[]time.Duration, fn func()) {
		start := time.Now()
		fn()
		*into = append(*into, time.Since(start))
	}
	var appended, kept, cold, whole, columns, floor []time.Duration
	total := n
	for b.Loop() {
		timed(&appended, func() {
			if err := w.Append(ctx, "c", storetest.UserText("round")); err != nil {
				b.Fatal(err)
			}
		})
		total++
		timed(&kept, func() {
			m, msgs, err := r.Marked(ctx, "c")
			if err != nil || len(m.Facts) != size || m.From+len(msgs) != total {
				b.Fatal(m.From, len(msgs), len(m.Facts), err)
			}
		})
		fresh := open()
		timed(&cold, func() {
			m, msgs, err := fresh.Marked(ctx, "c")
			if err != nil || len(m.Facts) != size || m.From+len(msgs) != total {
				b.Fatal(m.From, len(msgs), len(m.Facts), err)
			}
		})
		fresh.Close()
		timed(&whole, func() {
			var got []byte
			if err := conn.QueryRow(ctx, `SELECT facts FROM `+table+` WHERE conversation = 'c'`).Scan(&got); err != nil || len(got) != size {
				b.Fatal(len(got), err)
			}
		})
		timed(&columns, func() {
			var at int32
			var stamp, crc int64
			if err := conn.QueryRow(ctx, `SELECT "from", stamp, crc FROM `+table+` WHERE conversation = 'c'`).Scan(&at, &stamp, &crc); err != nil {
				b.Fatal(err)
			}
		})
		timed(&floor, func() {
			got, err := os.ReadFile(file)
			if err != nil || len(got) != size {
				b.Fatal(len(got), err)
			}
		})
	}
	ms := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / 1e6
	}
	b.ReportMetric(ms(appended), "append-ms")
	b.ReportMetric(ms(kept), "kept-marked-ms")
	b.ReportMetric(ms(cold), "cold-marked-ms")
	b.ReportMetric(ms(whole), "facts-ms")
	b.ReportMetric(ms(columns), "columns-ms")
	b.ReportMetric(ms(floor), "readfile-ms")
}
