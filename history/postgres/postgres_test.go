package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/storetest"
)

// dsn is the test server's DSN (MYELIN_TEST_POSTGRES). Without one the test
// is skipped, but under CI=true it fails, saying how to start one.
func dsn(t *testing.T) string {
	t.Helper()
	d := os.Getenv("MYELIN_TEST_POSTGRES")
	if d == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MYELIN_TEST_POSTGRES is not set: under CI the Postgres store must be tested; start a throwaway server with: eval \"$(.ci/postgres start)\" (and .ci/postgres stop after)")
		}
		t.Skip("MYELIN_TEST_POSTGRES is not set (start a throwaway server with: eval \"$(.ci/postgres start)\")")
	}
	return d
}

// schema makes a new schema name for one test and drops the schema when
// the test ends: tests and packages run in parallel on one database, each
// in its own schema.
func schema(t *testing.T) string {
	t.Helper()
	d := dsn(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// opener opens stores on one new schema, timed by now (nil: the
// database's clock), each closed when the test ends; it returns the
// schema's name too.
func opener(t *testing.T, now func() time.Time) (func() *postgres.Store, string) {
	t.Helper()
	d, name := dsn(t), schema(t)
	return func() *postgres.Store {
		t.Helper()
		s, err := postgres.Open(context.Background(), d, postgres.Options{Schema: name, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, name
}

func TestPostgresKeepsTheStoreContract(t *testing.T) {
	dsn(t)
	storetest.Run(t, storetest.Subject{Shared: true, Open: func(t *testing.T, now func() time.Time) func() history.Store {
		open, _ := opener(t, now)
		return func() history.Store { return open() }
	}})
}
