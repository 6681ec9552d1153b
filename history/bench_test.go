package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRoundCommit measures what keeping each finished call's result
// at once (Keep, not synced) adds to storing a round of 10 results, side by
// side in one run:
//
//   - fsync-floor: write 4 KiB to a file and fsync it — what one synced
//     commit cannot go below on this disk;
//   - results-only: the round's results in one synced Append (the path
//     before results were kept);
//   - kept-then-results: 10 Keeps under the claim, then the same Append,
//     which removes them.
//
// Run:
//
//	go test ./history -run '^$' -bench RoundCommit -count 6
func BenchmarkRoundCommit(b *testing.B) {
	const calls = 10
	results := Message{Role: User}
	for i := range calls {
		results.Parts = append(results.Parts, Part{Type: ToolResultPart, CallID: fmt.Sprintf("toolu_%d", i),
			Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"})
	}
	b.Run("fsync-floor", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "f"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		page := []byte(strings.Repeat("x", 4096))
		for b.Loop() {
			if _, err := f.WriteAt(page, 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, keep := range []bool{false, true} {
		name := "results-only"
		if keep {
			name = "kept-then-results"
		}
		b.Run(name, func(b *testing.B) {
			s, err := OpenSQLiteWith(filepath.Join(b.TempDir(), "h.db"), SQLiteOptions{Relaxed: os.Getenv("RELAX") != ""})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if err := s.Create(ctx, Conversation{ID: "c"}); err != nil {
				b.Fatal(err)
			}
			h, err := s.Claim(ctx, "c", NewHolder(), DefaultLease)
			if err != nil {
				b.Fatal(err)
			}
			wctx := Writing(ctx, h)
			for b.Loop() {
				if keep {
					for _, p := range results.Parts {
						if err := s.Keep(Lazy(wctx), "c", p); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := s.Append(wctx, "c", results); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
