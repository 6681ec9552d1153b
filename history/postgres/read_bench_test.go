//go:build unix

package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/storetest"
)

// BenchmarkReadAfterRestart reads a stored conversation of 10,000 and of
// 100,000 messages whole from a store just opened — what a worker does
// when it takes a turn of a conversation it has not read yet, and a
// restarted process's first read — side by side in every iteration with
// its floor:
//
//   - step-ms, the floor: the same statement's rows fetched on one pgx
//     connection, each row's bytes scanned and let go (the server's part
//     and the wire's, nothing checked, decoded or kept);
//   - messages-ms: Store.Messages of a store just opened (fetched,
//     checked against each row's checksum, decoded, kept);
//   - messages-cpu-ms, step-cpu-ms: this process's CPU time for each (the
//     server's is not in it);
//   - x-step-paired: the median of messages-ms / step-ms, each pair taken
//     in the same iteration.
//
// Each figure is the median of the iterations. Run:
//
//	eval "$(.ci/postgres start)"
//	go test ./history/postgres -run '^$' -bench ReadAfterRestart -benchtime 5x
func BenchmarkReadAfterRestart(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { readAfterRestart(b, n) })
	}
}

func readAfterRestart(b *testing.B, n int) {
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
	s := open()
	storeRounds(b, s, "c", n)
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	query := fmt.Sprintf(`SELECT c.base, c.base_at, c.messages, m.seq, m.message, m.crc FROM %s.conversations c
		LEFT JOIN %s.messages m ON m.conversation = c.id AND m.seq >= $2 AND m.seq <= $3 WHERE c.id = $1 ORDER BY m.seq`,
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{name}.Sanitize())
	var steps, reads, stepCPUs, readCPUs []time.Duration
	var paired []float64
	for b.Loop() {
		start, cpu := time.Now(), cpuTime()
		rows, err := conn.Query(ctx, query, "c", 0, 1<<31-1)
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for rows.Next() {
			raw := rows.RawValues()
			if len(raw) != 6 || len(raw[4]) == 0 {
				b.Fatalf("a row of %d columns", len(raw))
			}
			count++
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		step, stepCPU := time.Since(start), cpuTime()-cpu
		if count != n {
			b.Fatalf("the floor stepped %d rows, want %d", count, n)
		}
		s := open()
		start, cpu = time.Now(), cpuTime()
		msgs, err := s.Messages(ctx, "c")
		read, readCPU := time.Since(start), cpuTime()-cpu
		if err != nil || len(msgs) != n {
			b.Fatalf("read %d messages, want %d: %v", len(msgs), n, err)
		}
		s.Close()
		steps, reads = append(steps, step), append(reads, read)
		stepCPUs, readCPUs = append(stepCPUs, stepCPU), append(readCPUs, readCPU)
		paired = append(paired, float64(read)/float64(step))
	}
	ms := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / 1e6
	}
	slices.Sort(paired)
	b.ReportMetric(ms(steps), "step-ms")
	b.ReportMetric(ms(reads), "messages-ms")
	b.ReportMetric(ms(stepCPUs), "step-cpu-ms")
	b.ReportMetric(ms(readCPUs), "messages-cpu-ms")
	b.ReportMetric(paired[len(paired)/2], "x-step-paired")
}

// storeRounds stores in conversation id of s n messages: a call and its
// result over and over, as history/sqlite's resume benchmark stores them.
func storeRounds(b *testing.B, s history.Store, id string, n int) {
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
		b.Fatal(err)
	}
	if err := storetest.AppendReadRounds(ctx, s, id, n, nil); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the CPU time this process has taken (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
