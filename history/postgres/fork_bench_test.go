//go:build unix

package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/storetest"
)

// BenchmarkColdAndWarmReadsOfAFork reads, from stores just opened (their
// first connection made), a fork
// f (its first 990 messages its base c's, of 1,000, then 20 of its own,
// marked at 500: in what it shares) and a conversation p of 1,000
// messages marked at 500 (in its own rows) — the reads that compare a
// record's version across statements (f's) and those that read one
// statement (p's Marked) — then, in ten rounds of two messages appended
// by another store, reads them again from what those stores keep:
//
//   - cold-marked-fork-ms, cold-messages-fork-ms: Marked and Messages of
//     f from a store just opened (its record, its base's part, its own
//     rows and its record's version again);
//   - cold-marked-plain-ms, cold-messages-plain-ms: the same of p;
//   - warm-marked-fork-ms, warm-messages-fork-ms: Marked and Messages of
//     f after two messages appended (one statement each). A store just
//     opened has a connection just made, whose first five executions of
//     a prepared statement Postgres plans each time (custom plans): these
//     figures include them, and so move with how many of them the cold
//     read ran (a cold read whose statements are not the warm one's runs
//     none); with plan_cache_mode=force_generic_plan they do not;
//   - begin-commit-ms, select-ms: on one pgx connection, a BEGIN
//     ISOLATION LEVEL REPEATABLE READ READ ONLY and its COMMIT (what a
//     multi-statement read in one snapshot would add), and a SELECT 1
//     (one round trip), side by side.
//
// Each figure is the median of the iterations. Run:
//
//	eval "$(.ci/postgres start)"
//	go test ./history/postgres -run '^$' -bench ColdAndWarmReadsOfAFork -benchtime 40x
func BenchmarkColdAndWarmReadsOfAFork(b *testing.B) {
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
	storeRounds(b, w, "c", 1000)
	storeRounds(b, w, "p", 1000)
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 990}); err != nil {
		b.Fatal(err)
	}
	if err := w.Append(ctx, "f", storetest.Numbered("f", 20)...); err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"f", "p"} {
		if err := w.SetMark(ctx, id, history.Mark{From: 500, Facts: []byte("facts")}); err != nil {
			b.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	figures := map[string][]time.Duration{}
	took := func(name string, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		figures[name] = append(figures[name], time.Since(start))
	}
	marked := func(s *postgres.Store, id string) func() error {
		return func() error { _, _, err := s.Marked(ctx, id); return err }
	}
	messages := func(s *postgres.Store, id string) func() error {
		return func() error { _, err := s.Messages(ctx, id); return err }
	}
	for b.Loop() {
		s1, s2, s3, s4 := open(), open(), open(), open()
		for _, s := range []*postgres.Store{s1, s2, s3, s4} {
			// a connection made: what is measured is the read, not the dial
			if _, err := s.Record(ctx, "none"); err == nil {
				b.Fatal("conversation none is there")
			}
		}
		took("cold-marked-fork-ms", marked(s1, "f"))
		took("cold-messages-fork-ms", messages(s2, "f"))
		took("cold-marked-plain-ms", marked(s3, "p"))
		took("cold-messages-plain-ms", messages(s4, "p"))
		for range 10 {
			if err := w.Append(ctx, "f", storetest.UserText("a"), storetest.UserText("b")); err != nil {
				b.Fatal(err)
			}
			took("warm-marked-fork-ms", marked(s1, "f"))
			took("warm-messages-fork-ms", messages(s2, "f"))
		}
		took("begin-commit-ms", func() error {
			if _, err := conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
				return err
			}
			_, err := conn.Exec(ctx, `COMMIT`)
			return err
		})
		took("select-ms", func() error { _, err := conn.Exec(ctx, `SELECT 1`); return err })
		for _, s := range []*postgres.Store{s1, s2, s3, s4} {
			s.Close()
		}
	}
	for name, ds := range figures {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2])/1e6, name)
	}
}
