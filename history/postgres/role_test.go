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
// not need to.
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
	if err := s.Append(history.Writing(ctx, h), "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
}
