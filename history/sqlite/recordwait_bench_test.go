package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// BenchmarkRecordBehindAFirstRead is the review's case of issue 34's
// eighth session: another conversation's Record, run in a loop on the
// same store while a fork of a 50,000-message base is read whole for the
// first time (nothing of it or its base kept), one Record a millisecond
// (a busy loop would take a core from the read). Each iteration is one
// read whole; it reports the p50 and p99 of the Records' times over all
// iterations (record-p50-ms, record-p99-ms), the median over the reads of
// the longest Record during each (record-longest-ms: the stall a read
// causes), how many Records ran during a read (records/read), and the
// read's median (read-ms). With the read
// transaction on the store's one connection a Record waited for the whole
// read; on a reader connection it does not.
//
//	go test ./history/sqlite -run '^$' -bench RecordBehindAFirstRead -benchtime 10x
func BenchmarkRecordBehindAFirstRead(b *testing.B) {
	ctx := context.Background()
	s := openStore(b, filepath.Join(b.TempDir(), "h.db"))
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		b.Fatal(err)
	}
	const base = 50_000
	for i := 0; i < base; i += 5000 {
		if err := s.Append(history.Lazy(ctx), "c", storetest.Numbered("m", 5000)...); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: base}); err != nil {
		b.Fatal(err)
	}
	if err := s.Append(ctx, "f", storetest.Numbered("n", 10)...); err != nil {
		b.Fatal(err)
	}
	if err := s.Create(ctx, history.Conversation{ID: "other"}); err != nil {
		b.Fatal(err)
	}
	if err := s.Append(ctx, "other", storetest.Numbered("o", 10)...); err != nil {
		b.Fatal(err)
	}
	var waits, longest, reads []time.Duration
	for b.Loop() {
		s.dropRead("c")
		s.dropRead("f")
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			msgs, err := s.Messages(ctx, "f")
			if err == nil && len(msgs) != base+10 {
				err = context.Canceled // any error: the count is wrong
			}
			done <- err
		}()
		var most time.Duration
		for running := true; running; {
			t := time.Now()
			if _, err := s.Record(ctx, "other"); err != nil {
				b.Fatal(err)
			}
			took := time.Since(t)
			waits = append(waits, took)
			most = max(most, took)
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
				reads = append(reads, time.Since(start))
				running = false
			case <-time.After(time.Millisecond): // a Record a millisecond, not a busy loop
			}
		}
		longest = append(longest, most)
	}
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2].Nanoseconds())/1e6, "record-p50-ms")
	b.ReportMetric(float64(waits[len(waits)*99/100].Nanoseconds())/1e6, "record-p99-ms")
	b.ReportMetric(float64(medianNs(longest))/1e6, "record-longest-ms")
	b.ReportMetric(float64(len(waits))/float64(len(reads)), "records/read")
	b.ReportMetric(float64(medianNs(reads))/1e6, "read-ms")
}
