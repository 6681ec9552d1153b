package sqlite

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// BenchmarkResumeOf reads back a resume point of 20 MB, the size of a
// 100,000-message conversation's kept prefix, from a store just opened
// (as a restarted process does), beside a bytes.Clone of the same bytes
// (the floor: a copy in memory). Run:
//
//	go test ./history/sqlite -run '^$' -bench ResumeOf -count 6
func BenchmarkResumeOf(b *testing.B) {
	ctx := context.Background()
	s, err := Open(filepath.Join(b.TempDir(), "h.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		b.Fatal(err)
	}
	p := history.ResumePoint{Wire: "w", Rows: 1, Messages: 1, Bytes: bytes.Repeat([]byte(`{"role":"user","content":[{"type":"text","text":"x"}]},`), 20<<20/54)}
	if err := s.KeepResume(ctx, "c", p); err != nil {
		b.Fatal(err)
	}
	path := s.path
	b.Run("read-back", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fresh, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := fresh.ResumeOf(ctx, "c"); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			fresh.Close()
			b.StartTimer()
		}
	})
	b.Run("copy-floor", func(b *testing.B) {
		for b.Loop() {
			_ = bytes.Clone(p.Bytes)
		}
	})
}
