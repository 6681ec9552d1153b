package sqlite

// This file tests the store's count of its open connections (logSync.conns).

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"os"
	"path/filepath"
	"testing"
)

// A connection database/sql discards (a reader, or the writer) while the
// store's others are open is not the last one: the log stays, the one
// kept for the syncs is not let go, and a log removed from under the
// writer afterwards is a failed sync (logsync.go: "removed or replaced
// from under the connection writing it"). Before the count, a reader's
// close let go of the kept log, and the next sync took the missing log
// for one checkpointed at the last close and said the commit was on
// disk.
func TestAConnectionDiscardedWhileOthersAreOpenLeavesTheLogKept(t *testing.T) {
	for _, c := range []struct {
		name string
		pool func(s *Store) *sql.DB
		// connections counted after the discard, and after the next
		// Append (which opens the writer again, not a reader)
		afterDiscard, afterAppend int
	}{
		{"a reader", func(s *Store) *sql.DB { return s.rdb }, readers, readers},
		{"the writer", func(s *Store) *sql.DB { return s.db }, readers, readers + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
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
			conn, err := c.pool(s).Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conn.Raw(func(any) error { return sqldriver.ErrBadConn }) // database/sql closes it
			conn.Close()
			s.logs.mu.Lock()
			conns, kept := s.logs.conns, s.logs.log != nil
			s.logs.mu.Unlock()
			if conns != c.afterDiscard || !kept {
				t.Fatalf("after the discard: %d connections counted (want %d), log kept %v", conns, c.afterDiscard, kept)
			}
			if err := s.Append(ctx, "c", userText("again")); err != nil {
				t.Fatal(err)
			}
			s.logs.mu.Lock()
			conns = s.logs.conns
			s.logs.mu.Unlock()
			if conns != c.afterAppend {
				t.Fatalf("counted %d after an append, want %d", conns, c.afterAppend)
			}
			if err := os.Remove(path + "-wal"); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, "c", userText("lost with a crash")); err == nil {
				t.Fatal("a synced Append into a log removed from under the writer returned nil")
			}
		})
	}
}
