package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
)

// A DSN that does not parse, and a server that is not there, are errors at
// Open that say what failed and where — never the password.
func TestABadDSNOrAnUnreachableServerIsAClearErrorAtOpen(t *testing.T) {
	for _, tc := range []struct {
		name, dsn string
		wants     []string
	}{
		{"a port that is not a number", "postgres://me:s3cret@127.0.0.1:notaport/db", []string{"the Postgres connection string is not valid"}},
		{"an unknown parameter value", "postgres://me:s3cret@127.0.0.1:5432/db?sslmode=sometimes", []string{"the Postgres connection string is not valid", "sslmode"}},
		// port 1 on loopback: nothing listens there
		{"no server listening", "postgres://me:s3cret@127.0.0.1:1/db?connect_timeout=5", []string{"history store postgres://me@127.0.0.1:1/db: cannot connect"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.Open(context.Background(), tc.dsn, postgres.Options{})
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// Processes that open a new database at once wait for each other's
// migration (the advisory lock): every one opens, and the layout is made
// once.
func TestProcessesOpeningANewDatabaseAtOnceAllOpenIt(t *testing.T) {
	name, _ := pgtest.Schema(t)
	d := dsn(t)
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), d, postgres.Options{Schema: name})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if v := layoutOf(t, name); v != postgres.Layout {
		t.Fatalf("layout %d; want %d", v, postgres.Layout)
	}
}

// A database a newer myelin made is refused, saying both layouts; one of
// this layout opens as it is.
func TestADatabaseOfANewerLayoutIsRefused(t *testing.T) {
	open, name := opener(t, nil)
	open()
	exec(t, name, `UPDATE myelin_layout SET version = version + 1`)
	_, err := postgres.Open(context.Background(), dsn(t), postgres.Options{Schema: name})
	want := "has layout 2, and this myelin reads layout 1"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v; want %q", err, want)
	}
}

// layoutOf reads the layout recorded in schema.
func layoutOf(t *testing.T, schema string) int {
	t.Helper()
	var v int
	conn := connect(t, schema)
	if err := conn.QueryRow(context.Background(), `SELECT version FROM myelin_layout`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// connect is a plain connection to the test database in schema, as
// something other than myelin would make, closed when the test ends.
func connect(t *testing.T, schema string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// exec runs SQL in schema, as something other than myelin would.
func exec(t *testing.T, schema, sql string, args ...any) {
	t.Helper()
	if _, err := connect(t, schema).Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}
