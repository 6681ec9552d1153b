//go:build linux

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// BenchmarkReadAfterRestart reads a stored conversation of 100,000
// messages whole from a store just opened, as a restarted process's first
// Messages does (issue 34 point 4, docs/performance.md "Resuming a stored
// conversation"), side by side in every iteration with its floor:
//
//   - step-ms, the floor: the same rows stepped through database/sql on
//     a store just opened, each blob scanned as sql.RawBytes and let go
//     (SQLite's part, the driver's and database/sql's, nothing kept,
//     checked or decoded), as the store stepped them before issue 34's
//     third session;
//   - driver-step-ms: the same rows stepped on the driver's connection
//     itself (sql.Conn.Raw), without database/sql's locking and
//     conversions per row, as the store steps them now (readRows);
//   - messages-ms: Store.Messages of a store just opened (stepped,
//     counted, checked, decoded, kept);
//   - step-cpu-ms, messages-cpu-ms: the CPU time the process took for
//     each (the decoders and the collector included): on a loaded machine
//     the steadier figures;
//   - get-ms: Store.Get of the conversation's record (it counts the
//     messages stored), on a store that has read it;
//   - x-step-paired, x-step-cpu-paired: the median over the iterations
//     of messages-ms / step-ms and of their CPU times, each pair taken in
//     the same iteration: on this shared machine the steadier comparison
//     of two builds.
//
// With MYELIN_READ_LARGE_RESULTS set, one result in ten is a file of
// ~18 KB read whole (its row on overflow pages) instead of a few lines.
//
// Each figure is the median of the iterations. Run:
//
//	go test ./history/sqlite -run '^$' -bench ReadAfterRestart -benchtime 10x
func BenchmarkReadAfterRestart(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "h.db")
	const n = 100000
	storeRounds(b, path, "c", n)
	open := func() *Store {
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	var steps, reads, gets, stepCPUs, readCPUs, raws []time.Duration
	for b.Loop() {
		raws = append(raws, rawStep(b, open(), n))
		s := open()
		start, cpu := time.Now(), cpuTime()
		rows, err := s.db.QueryContext(ctx, `SELECT m.seq, m.message, m.crc FROM conversations c LEFT JOIN messages m ON m.conversation = c.id AND m.seq > ? WHERE c.id = ? ORDER BY m.seq`, 0, "c")
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for rows.Next() {
			var raw sql.RawBytes
			var seq, crc sql.NullInt64
			if err := rows.Scan(&seq, &raw, &crc); err != nil {
				b.Fatal(err)
			}
			count++
		}
		if err := rows.Err(); err != nil || count != n {
			b.Fatal(count, err)
		}
		rows.Close()
		steps, stepCPUs = append(steps, time.Since(start)), append(stepCPUs, cpuTime()-cpu)
		s.Close()

		s = open()
		start, cpu = time.Now(), cpuTime()
		msgs, err := s.Messages(ctx, "c")
		if err != nil || len(msgs) != n {
			b.Fatal(len(msgs), err)
		}
		reads, readCPUs = append(reads, time.Since(start)), append(readCPUs, cpuTime()-cpu)
		start = time.Now()
		if _, err := s.Get(ctx, "c"); err != nil {
			b.Fatal(err)
		}
		gets = append(gets, time.Since(start))
		s.Close()
	}
	over, overCPU := make([]float64, len(reads)), make([]float64, len(reads))
	for i := range reads {
		over[i] = float64(reads[i]) / float64(steps[i])
		overCPU[i] = float64(readCPUs[i]) / float64(stepCPUs[i])
	}
	slices.Sort(over)
	slices.Sort(overCPU)
	b.ReportMetric(over[len(over)/2], "x-step-paired")
	b.ReportMetric(overCPU[len(overCPU)/2], "x-step-cpu-paired")
	b.ReportMetric(medianMs(steps), "step-ms")
	b.ReportMetric(medianMs(reads), "messages-ms")
	b.ReportMetric(medianMs(raws), "driver-step-ms")
	b.ReportMetric(medianMs(stepCPUs), "step-cpu-ms")
	b.ReportMetric(medianMs(readCPUs), "messages-cpu-ms")
	b.ReportMetric(medianMs(gets), "get-ms")
}

// rawStep steps conversation c's n rows of store s (closed after) on the
// driver's connection itself, each blob let go, and returns how long it
// took.
func rawStep(b *testing.B, s *Store, n int) time.Duration {
	defer s.Close()
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	err = conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, `SELECT m.seq, m.message, m.crc FROM conversations c LEFT JOIN messages m ON m.conversation = c.id AND m.seq > ? WHERE c.id = ? ORDER BY m.seq`)
		if err != nil {
			return err
		}
		defer st.Close()
		rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, []driver.NamedValue{{Ordinal: 1, Value: int64(0)}, {Ordinal: 2, Value: "c"}})
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 3)
		count := 0
		for {
			if err := rows.Next(dest); err == io.EOF {
				break
			} else if err != nil {
				return err
			}
			if _, ok := dest[1].([]byte); !ok {
				return fmt.Errorf("row %d: message is %T", count, dest[1])
			}
			count++
		}
		if count != n {
			return fmt.Errorf("%d rows, want %d", count, n)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// medianMs is the median of ds in milliseconds.
func medianMs(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}

// storeRounds makes conversation id in a new store at path: n messages,
// an answer with a tool call and its result over and over (with
// MYELIN_READ_LARGE_RESULTS, one result in ten ~18 KB).
func storeRounds(b *testing.B, path, id string, n int) {
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
		b.Fatal(err)
	}
	large := os.Getenv("MYELIN_READ_LARGE_RESULTS") != ""
	err = storetest.AppendReadRounds(ctx, s, id, n, func(i int) string {
		if large && i%20 == 0 {
			return strings.Repeat("     1\tpackage main // a long line of a long file read whole\n", 300) // ~18 KB
		}
		return storetest.ShortFile
	})
	if err != nil {
		b.Fatal(err)
	}
}
