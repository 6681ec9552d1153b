package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// A commit writes its frames to the store's log with one write, not a
// header and a page each (logvfs.go; issue 34: a write cost ~10 µs of
// system time here, and a round's commits made twelve): the lazy answer,
// a keep, and the synced results (whose sync is an fdatasync, not a
// write), each one write system call of the process (/proc/self/io).
func TestACommitWritesItsFramesToTheLogInOneWrite(t *testing.T) {
	if writeCalls() < 0 {
		t.Skip("/proc/self/io cannot be read here")
	}
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	w := history.Writing(ctx, h)
	answer, results := lightRound()
	if err := oneRound(s, w, answer, results); err != nil { // the log made and its pages known
		t.Fatal(err)
	}
	for _, step := range []struct {
		name  string
		write func() error
	}{
		{"the answer, appended lazily", func() error { return s.Append(history.Lazy(w), "c", answer) }},
		{"a result kept", func() error { return s.Keep(history.Lazy(w), "c", results.Parts[0]) }},
		{"the results, appended synced", func() error { return s.Append(w, "c", results) }},
	} {
		before := writeCalls()
		if err := step.write(); err != nil {
			t.Fatal(err)
		}
		if n := writeCalls() - before; n != 1 {
			t.Errorf("%s made %d write system calls; want 1 (its frames together)", step.name, n)
		}
	}
}
