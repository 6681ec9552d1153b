package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// A round's transaction whose context ends while it runs (the run
// cancelled mid-round) is rolled back: the store's connection is left
// with no transaction open and the write lock free, so the next Append of
// this opening, and one of another opening (another process), succeed.
func TestATransactionWhoseContextEndsIsRolledBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	failed := errors.New("the round failed as its context ended")
	err := s.rawWriteAnd(cctx, "appending", true, func(tx rawTx) error {
		if err := tx.exec(tx.st.touch, "2026-01-01T00:00:00Z", record.UpdatedChecksum("c", "2026-01-01T00:00:00Z"), 0, "c"); err != nil {
			return err
		}
		cancel()
		return failed
	}, nil)
	if !errors.Is(err, failed) {
		t.Fatalf("the transaction returned %v, want its own error", err)
	}
	if c, err := s.Get(ctx, "c"); err != nil || c.Updated.Year() == 2026 && c.Updated.Month() == 1 && c.Updated.Day() == 1 {
		t.Errorf("this opening reads the conversation as updated at %v (%v): what the failed transaction wrote", c.Updated, err)
	}
	if err := s.Append(ctx, "c", userText("after")); err != nil {
		t.Errorf("the next Append of this opening: %v", err)
	}
	other := openStore(t, path)
	if err := other.Append(ctx, "c", userText("from another opening")); err != nil {
		t.Errorf("an Append of another opening: %v", err)
	}
}

// A transaction whose context ends just before its COMMIT is either
// committed and reported so, or rolled back and reported failed — never
// left open on the connection (the next Append fails, another opening
// waits for the write lock), and never reported failed while committed.
func TestACommitWhoseContextEndedLeavesNoTransactionOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	err := s.rawWriteAnd(cctx, "appending", true, func(tx rawTx) error {
		err := tx.exec(tx.st.touch, "2026-01-01T00:00:00Z", record.UpdatedChecksum("c", "2026-01-01T00:00:00Z"), 0, "c")
		cancel()
		return err
	}, nil)
	var updated string
	if qerr := openStore(t, path).db.QueryRow(`SELECT updated FROM conversations WHERE id = 'c'`).Scan(&updated); qerr != nil {
		t.Fatalf("another opening reading the conversation: %v", qerr)
	}
	if committed := updated == "2026-01-01T00:00:00Z"; committed != (err == nil) {
		t.Errorf("the transaction returned %v, but another opening finds it committed=%v", err, committed)
	}
	if err := s.Append(ctx, "c", userText("after")); err != nil {
		t.Errorf("the next Append of this opening: %v", err)
	}
}
