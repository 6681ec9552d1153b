package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// The statements of readTag as they were before heldCRC: the checksum of
// the conversation's own row, noRow where the message is its base's.
var (
	ownOnlySelectNewTagged = strings.Replace(selectNewTagged, heldCRC("?3", "?1"),
		`COALESCE((SELECT crc FROM messages WHERE conversation = ?3 AND seq = ?1), `+fmt.Sprint(noRow)+`)`, 1)
	ownOnlyNextSeqSQL = strings.Replace(nextSeqSQL, `, `+baseRowCRC("?1", "x.base_at")+`, `, `, `, 1)
)

// BenchmarkReadTagStatements times the statements that read a readTag,
// as they are (heldCRC) and as they were (the own row's checksum alone),
// run in turn in each iteration, paired: the tagged read of nothing new
// (selectNewTagged, every read after the first) and an append's read
// (nextSeqSQL, every Append and SetMark), of a conversation of 100
// messages of its own ("own": the agent's every round) and of a fork of
// it at 100 with none of its own ("fork": the step to its base's row),
// and of a conversation with no messages ("empty": a new one's first
// Append, where no row holds its 0th).
// Each reports the medians in µs and the median of new/old.
//
//	go test ./history/sqlite -run '^$' -bench ReadTagStatements -benchtime 20000x
func BenchmarkReadTagStatements(b *testing.B) {
	ctx := context.Background()
	s := forkedAt100(b)
	if err := s.Create(ctx, history.Conversation{ID: "e"}); err != nil {
		b.Fatal(err)
	}
	prepare := func(q string) *sql.Stmt {
		st, err := s.db.Prepare(q)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}
	step := func(st *sql.Stmt, args ...any) {
		rows, err := st.Query(args...)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Close(); err != nil || n != 1 {
			b.Fatalf("%d rows, %v", n, err)
		}
	}
	for _, c := range []struct {
		name, id string
		n        int
	}{{"own", "c", 100}, {"fork", "f", 100}, {"empty", "e", 0}} {
		for _, q := range []struct {
			name     string
			old, now string
			args     []any
		}{
			{"tagged-read", ownOnlySelectNewTagged, selectNewTagged, []any{c.n, c.n, c.id}},
			{"append-read", ownOnlyNextSeqSQL, nextSeqSQL, []any{c.id}},
		} {
			if q.old == q.now {
				b.Fatalf("%s: no statement as it was", q.name)
			}
			b.Run(c.name+"/"+q.name, func(b *testing.B) {
				old, now := prepare(q.old), prepare(q.now)
				var olds, nows []time.Duration
				var ratios []float64
				for i := 0; b.Loop(); i++ {
					var took [2]time.Duration
					for k := range 2 {
						at := (k + i) % 2
						st := []*sql.Stmt{old, now}[at]
						start := time.Now()
						step(st, q.args...)
						took[at] = time.Since(start)
					}
					olds, nows = append(olds, took[0]), append(nows, took[1])
					ratios = append(ratios, float64(took[1])/float64(took[0]))
				}
				slices.Sort(ratios)
				b.ReportMetric(float64(medianNs(olds))/1e3, "old-µs")
				b.ReportMetric(float64(medianNs(nows))/1e3, "new-µs")
				b.ReportMetric(ratios[len(ratios)/2], "x-new/old-paired")
			})
		}
	}
}

// BenchmarkRoundWithTheAppendsReadAsItWas is BenchmarkDurableRound's
// round (three commits, the last synced, then the writer's read) of two
// stores in one run, paired per iteration, their order alternated: one
// whose connection prepared the append's read as it was before heldCRC
// (ownOnlyNextSeqSQL: the round's statements are prepared on the
// connection's first use, from nextSeqSQL as it is then), and one as it
// is. Under its claim the writer's read runs no statement: the append's
// read is the round's one statement that changed. It reports the medians
// in µs and the median of new/old.
//
//	go test ./history/sqlite -run '^$' -bench RoundWithTheAppendsReadAsItWas -benchtime 3000x
func BenchmarkRoundWithTheAppendsReadAsItWas(b *testing.B) {
	answer, results := lightRound()
	saved := nextSeqSQL
	nextSeqSQL = ownOnlyNextSeqSQL
	old, octx := claimedStore(b)
	if err := oneRound(old, octx, answer, results); err != nil { // prepares
		b.Fatal(err)
	}
	nextSeqSQL = saved
	now, nctx := claimedStore(b)
	if err := oneRound(now, nctx, answer, results); err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		s   *Store
		ctx context.Context
	}{{old, octx}, {now, nctx}} {
		if _, err := s.s.Messages(s.ctx, "c"); err != nil {
			b.Fatal(err)
		}
	}
	var ratios, olds, nows []float64
	for i := 0; b.Loop(); i++ {
		var took [2]time.Duration
		for k := range 2 {
			at := (k + i) % 2
			s, ctx := old, octx
			if at == 1 {
				s, ctx = now, nctx
			}
			start := time.Now()
			if err := oneRound(s, ctx, answer, results); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Messages(ctx, "c"); err != nil {
				b.Fatal(err)
			}
			took[at] = time.Since(start)
		}
		olds = append(olds, float64(took[0].Nanoseconds())/1e3)
		nows = append(nows, float64(took[1].Nanoseconds())/1e3)
		ratios = append(ratios, float64(took[1])/float64(took[0]))
	}
	med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(med(olds), "old-µs/round")
	b.ReportMetric(med(nows), "new-µs/round")
	b.ReportMetric(med(ratios), "x-new/old-paired")
}

// forkedAt100 is a new store holding conversation c of 100 numbered
// messages ("m 0" …) and f, a fork of c at 100 with none of its own: the
// benchmarks' own conversation and fork.
func forkedAt100(b *testing.B) *Store {
	ctx := context.Background()
	s := openStore(b, filepath.Join(b.TempDir(), "h.db"))
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		b.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.Numbered("m", 100)...); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 100}); err != nil {
		b.Fatal(err)
	}
	return s
}
