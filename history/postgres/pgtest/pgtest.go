// Package pgtest gives tests a PostgreSQL database of their own: the
// server named by MYELIN_TEST_POSTGRES (started by .ci/postgres), and in it
// a new schema per test, dropped when the test ends, so that tests and
// packages run in parallel on one server. Without the variable a test is
// skipped, but under CI=true it fails, saying how to start a server.
//
// It is for tests only; it must not start or stop servers itself.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/internal/skipped"
)

// Env names the variable holding the test server's DSN.
const Env = "MYELIN_TEST_POSTGRES"

// DSN is the test server's DSN, or skips t (fails it under CI=true) when
// there is none.
func DSN(t testing.TB) string {
	t.Helper()
	d := os.Getenv(Env)
	if d == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(Env + " is not set: under CI the Postgres store must be tested; start a throwaway server with: eval \"$(.ci/postgres start)\" (and .ci/postgres stop after)")
		}
		skipped.Need(t, Env, `a PostgreSQL server: eval "$(.ci/postgres start)"`)
	}
	return d
}

// Schema makes a new, empty schema on the test server for t, dropped with
// all it holds when t ends, and returns its name and a DSN whose
// search_path is it (the DSN must be a URL).
func Schema(t testing.TB) (name, dsn string) {
	t.Helper()
	d := DSN(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name = "test_" + hex.EncodeToString(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d)
	if err != nil {
		t.Fatalf("connecting to the test server (%s): %v", Env, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("making schema %s: %v", name, err)
	}
	t.Cleanup(func() {
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
	u, err := url.Parse(d)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", Env, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return name, u.String()
}
