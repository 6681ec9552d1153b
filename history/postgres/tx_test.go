package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/storetest"
)

// What WithinAppend's hook writes commits with the append, and its error
// rolls the append back: both or neither.
func TestAnAppendsHookCommitsWithItOrUndoesIt(t *testing.T) {
	open, _ := opener(t, nil)
	s := open()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c", System: "s"}); err != nil {
		t.Fatal(err)
	}
	mark := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE marks (n int); INSERT INTO marks VALUES (1)`)
		return err
	}
	if err := s.Append(postgres.WithinAppend(ctx, mark), "c", storetest.UserText("kept")); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused by the hook")
	err := s.Append(postgres.WithinAppend(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO marks VALUES (2)`); err != nil {
			return err
		}
		return refused
	}), "c", storetest.UserText("undone"))
	if !errors.Is(err, refused) {
		t.Fatalf("Append with a failing hook: %v", err)
	}
	msgs, err := open().Messages(ctx, "c")
	if err != nil || len(msgs) != 1 || msgs[0].Parts[0].Text != "kept" {
		t.Fatalf("stored %+v, %v; want the first append alone", msgs, err)
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM marks`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d marks (%v), want the first hook's alone", n, err)
	}
}
