package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// BenchmarkOpenAndFirstMarked is what a fresh process pays for the store
// before its first request: OpenWith of a store that is there (NoFollow,
// as the CLI's default store), its checks and connections, and the first
// Marked of a short conversation. Close is not timed.
func BenchmarkOpenAndFirstMarked(b *testing.B) {
	path := filepath.Join(b.TempDir(), "h.db")
	s := openStore(b, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		b.Fatal(err)
	}
	if err := s.Append(ctx, "c", userText("a"), userText("b")); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for range b.N {
		s, err := OpenWith(path, Options{NoFollow: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Marked(ctx, "c"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}
