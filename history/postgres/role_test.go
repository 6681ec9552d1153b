package postgres_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
)

// A role that may read and write the store's tables but not create any —
// the least a DBA gives an application once the tables are made — opens a
// store of this myelin's layout and uses it: Open makes nothing it does
// not need to. Granted every table of layout 8 (conversation_marks
// among them, docs/scale.md), it marks, rewinds and deletes, and so does
// a myelin of layout 7 still running as it (its Rewind's UPDATE fires
// the layout's trigger, which runs with the role's rights; its Delete
// takes the mark along).
func TestARoleThatMayNotCreateTablesOpensAStoreOfItsLayout(t *testing.T) {
	ctx := context.Background()
	open, name := opener(t, nil)
	open() // the tables made, by their owner
	role := name + "_app"
	for _, sql := range []string{
		`CREATE ROLE ` + pgx.Identifier{role}.Sanitize() + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + pgx.Identifier{name}.Sanitize() + ` TO ` + pgx.Identifier{role}.Sanitize(),
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + pgx.Identifier{name}.Sanitize() + ` TO ` + pgx.Identifier{role}.Sanitize(),
	} {
		exec(t, name, sql)
	}
	t.Cleanup(func() {
		exec(t, name, `DROP OWNED BY `+pgx.Identifier{role}.Sanitize())
		exec(t, name, `DROP ROLE `+pgx.Identifier{role}.Sanitize())
	})
	u, err := url.Parse(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	s, err := postgres.Open(ctx, withParam(t, u.String(), "search_path", name), postgres.Options{})
	if err != nil {
		t.Fatalf("opening as a role that may not create tables: %v", err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	hi := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}}
	if err := s.Append(history.Writing(ctx, h), "c", hi, hi, hi); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(history.Writing(ctx, h), "c", history.Mark{From: 2, Facts: []byte("f")}); err != nil {
		t.Fatalf("marking as the role: %v", err)
	}
	if m, msgs, err := s.Marked(ctx, "c"); err != nil || m.From != 2 || len(msgs) != 1 {
		t.Fatalf("reading the mark as the role: from %d, %d messages, %v", m.From, len(msgs), err)
	}
	if _, err := s.Rewind(history.Writing(ctx, h), "c", 2); err != nil {
		t.Fatalf("rewinding as the role: %v", err)
	}
	if err := s.Release(ctx, "c", h); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatalf("deleting as the role: %v", err)
	}

	// a myelin of layout 7 as the same role: its Rewind's UPDATE of the
	// record (the branch's rows aside) and its Delete
	if err := s.Create(ctx, history.Conversation{ID: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "d", hi, hi, hi); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(ctx, "d", history.Mark{From: 1, Facts: []byte("f")}); err != nil {
		t.Fatal(err)
	}
	older, err := pgx.Connect(ctx, withParam(t, u.String(), "search_path", name))
	if err != nil {
		t.Fatal(err)
	}
	defer older.Close(ctx)
	if _, err := older.Exec(ctx, `UPDATE conversations SET messages = messages, base_at = base_at, base_crc = base_crc WHERE id = 'd'`); err != nil {
		t.Errorf("a layout-7 myelin's Rewind as the role: %v", err)
	}
	if err := s.SetMark(ctx, "d", history.Mark{From: 1, Facts: []byte("f")}); err != nil { // the rewind dropped it
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM messages WHERE conversation = 'd'`, `DELETE FROM conversations WHERE id = 'd'`} {
		if _, err := older.Exec(ctx, q); err != nil {
			t.Errorf("a layout-7 myelin's Delete as the role (%s): %v", q, err)
		}
	}
}
