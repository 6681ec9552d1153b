package sqlite

// This file tests what becomes of a connection whose ROLLBACK failed
// (rawTx.rollBack).

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// A ROLLBACK that failed may leave its transaction open (a writer's
// write lock, a reader's snapshot): the connection is closed, not given
// back to database/sql to be taken again; one whose ROLLBACK found no
// transaction open (SQLite's own rollback after an error, or a BEGIN that
// never ran) is kept.
func TestAConnectionWhoseRollbackFailedIsClosed(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	makeConv(t, s, "c", "", 0, "m", 4)
	t.Cleanup(func() { rollbackFailed = nil })
	injected := errors.New("disk I/O error (injected)")

	// the message SQLite gives a ROLLBACK with no transaction open, which
	// rollBack takes for a transaction ended
	_, err := s.db.ExecContext(ctx, `ROLLBACK`)
	if err == nil || !strings.Contains(err.Error(), "no transaction is active") {
		t.Fatalf("a ROLLBACK with no transaction open: %v; rollBack looks for \"no transaction is active\"", err)
	}

	for _, c := range []struct {
		name      string
		failWith  error
		closed    bool
		writer    bool
		operation func() error
	}{
		{"a write that failed, its rollback failing", injected, true, true, func() error { return s.Append(ctx, "missing", userText("x")) }},
		{"a write that failed, its rollback finding none open", errors.New("cannot rollback - no transaction is active"), false, true, func() error { return s.Append(ctx, "missing", userText("x")) }},
		{"a read whole, its rollback failing", injected, true, false, func() error { s.dropRead("c"); _, err := s.Messages(ctx, "c"); return err }},
		{"a read whole, its rollback finding none open", errors.New("cannot rollback - no transaction is active"), false, false, func() error { s.dropRead("c"); _, err := s.Messages(ctx, "c"); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := s.rdb
			if c.writer {
				db = s.db
			}
			if err := c.operation(); err != nil && !c.writer { // opens what the pool had closed
				t.Fatalf("before: %v", err)
			}
			before := db.Stats().OpenConnections
			rollbackFailed = func(error) error { rollbackFailed = nil; return c.failWith }
			err := c.operation()
			if c.writer && err == nil {
				t.Fatal("an append to a conversation that is not there succeeded")
			}
			if !c.writer && c.closed != (err != nil) {
				t.Fatalf("the read: %v", err)
			}
			after := db.Stats().OpenConnections
			if c.closed && after != before-1 {
				t.Fatalf("%d connections open before, %d after: the one whose rollback failed was given back, not closed", before, after)
			}
			if !c.closed && after != before {
				t.Fatalf("%d connections open before, %d after: one whose rollback found no transaction was closed", before, after)
			}
			if c.closed && err != nil && !strings.Contains(err.Error(), "injected") && !c.writer {
				t.Fatalf("the read's error does not say the rollback failed: %v", err)
			}
			// the store goes on
			if err := s.Append(ctx, "c", userText("more")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Messages(ctx, "c"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
