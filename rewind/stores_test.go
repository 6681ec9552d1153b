package rewind_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/sqlite"
)

type namedStore struct {
	name  string
	store history.Store
}

// stores are the stores a test runs on: Memory, SQLite in a file of its
// own, and Postgres in a schema of its own when the test server is given
// (pgtest.Env).
func stores(t *testing.T) []namedStore {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	out := []namedStore{{"memory", &history.Memory{}}, {"sqlite", s}}
	if os.Getenv(pgtest.Env) != "" {
		name, _ := pgtest.Schema(t)
		pg, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Options{Schema: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		out = append(out, namedStore{"postgres", pg})
	}
	return out
}
