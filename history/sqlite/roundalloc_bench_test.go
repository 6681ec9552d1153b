package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// BenchmarkTwoLazyAppends is a light round's two appends under the
// writer's claim (the answer, then the results), lazy so that the disk
// is out of it: what the store's own code costs a round, allocations
// above all (-benchmem).
func BenchmarkTwoLazyAppends(b *testing.B) {
	s := openStore(b, filepath.Join(b.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		b.Fatal(err)
	}
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		b.Fatal(err)
	}
	w := history.Lazy(history.Writing(ctx, h))
	answer, results := lightRound()
	for range 50 {
		if err := s.Append(w, "c", answer, results); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Append(w, "c", answer); err != nil {
			b.Fatal(err)
		}
		if err := s.Append(w, "c", results); err != nil {
			b.Fatal(err)
		}
	}
}
