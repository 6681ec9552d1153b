package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history/storetest"
)

// BenchmarkFirstRead times a read whole of a short conversation by a
// store that keeps nothing of it (as a store just opened reads it; its
// statements already prepared): "conv" of 100 messages, and "fork", a
// fork of it at 100 with 10 of its own (its record, its base's messages
// read whole, its rows). Where the fixed costs of a read whole show, not
// the rows' (BenchmarkReadAfterRestart has 100,000 of them): the read
// transaction a read whole runs in (BEGIN and ROLLBACK), and the record's
// statement. Each reports the median µs of a read.
//
//	go test ./history/sqlite -run '^$' -bench FirstRead -benchtime 2000x
func BenchmarkFirstRead(b *testing.B) {
	ctx := context.Background()
	s := forkedAt100(b)
	if err := s.Append(ctx, "f", storetest.Numbered("n", 10)...); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, id string
		want     int
	}{{"conv", "c", 100}, {"fork", "f", 110}} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				s.dropRead("c")
				s.dropRead("f")
				start := time.Now()
				msgs, err := s.Messages(ctx, c.id)
				took = append(took, time.Since(start))
				if err != nil || len(msgs) != c.want {
					b.Fatal(fmt.Sprint(len(msgs), " messages, ", err))
				}
			}
			b.ReportMetric(float64(medianNs(took))/1e3, "read-µs")
		})
	}
}
