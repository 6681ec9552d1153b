package sqlite

// This file tests the store's count of its open connections (logSync.conns).

import (
	"context"
	sqldriver "database/sql/driver"
	"os"
	"path/filepath"
	"testing"
)

// The writer discarded by database/sql while the readers are open is
// not the last connection: the log stays, the kept one is not let go,
// and a log removed afterwards is a failed sync.
func TestAWriterDiscardedWhileReadersAreOpenLeavesTheLogKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	makeConv(t, s, "c", "", 0, "m", 3)
	if err := s.Append(ctx, "c", userText("synced")); err != nil {
		t.Fatal(err)
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Raw(func(any) error { return sqldriver.ErrBadConn })
	c.Close()
	s.logs.mu.Lock()
	conns, kept := s.logs.conns, s.logs.log != nil
	s.logs.mu.Unlock()
	t.Logf("after the writer's discard: %d connections counted, log kept %v", conns, kept)
	if conns != 2 || !kept {
		t.Fatalf("counted %d (want 2 readers), log kept %v", conns, kept)
	}
	if err := s.Append(ctx, "c", userText("again")); err != nil {
		t.Fatal(err)
	}
	s.logs.mu.Lock()
	conns = s.logs.conns
	s.logs.mu.Unlock()
	if conns != 3 {
		t.Fatalf("counted %d after the writer reopened, want 3", conns)
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", userText("lost")); err == nil {
		t.Fatal("a synced Append into a log removed from under the writer returned nil")
	}
}
