package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/storetest"
)

// dsn is the test server's DSN (pgtest.DSN).
func dsn(t *testing.T) string { t.Helper(); return pgtest.DSN(t) }

// opener opens stores on one new schema, timed by now (nil: the
// database's clock), each closed when the test ends; it returns the
// schema's name too.
func opener(t *testing.T, now func() time.Time) (func() *postgres.Store, string) {
	t.Helper()
	name, _ := pgtest.Schema(t)
	d := dsn(t)
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
	storetest.Run(t, storetest.Subject{Shared: true, Damage: func(t *testing.T, s history.Store, sql string) {
		if err := postgres.ExecSQL(s, sql); err != nil {
			t.Fatal(err)
		}
	}, Open: func(t *testing.T, now func() time.Time) func() history.Store {
		open, _ := opener(t, now)
		return func() history.Store { return open() }
	}})
}
