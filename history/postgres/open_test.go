package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
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
		// a password of a letter or two is taken out where it stands, not
		// wherever those letters are in the error's words
		{"a short password, a bad port", "postgres://me:a@127.0.0.1:99999/db", []string{"the Postgres connection string is not valid", "cannot parse", "invalid port"}},
		{"a short password in key=value pairs", "host=127.0.0.1 port=99999 user=me password=a", []string{"the Postgres connection string is not valid", "cannot parse", "invalid port"}},
		{"a quoted password in key=value pairs", "host=127.0.0.1 port=99999 user=me password='s3cret word'", []string{"the Postgres connection string is not valid", "invalid port"}},
		{"a password in the URL's query", "postgres://me@127.0.0.1:99999/db?password=s3cret&sslmode=disable", []string{"the Postgres connection string is not valid", "invalid port"}},
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
// once — also where the database's default isolation is stricter, and a
// process that waited would otherwise read the layout as it was before.
func TestProcessesOpeningANewDatabaseAtOnceAllOpenIt(t *testing.T) {
	for _, isolation := range []string{"", "repeatable read", "serializable"} {
		t.Run("default isolation "+isolation, func(t *testing.T) { openAtOnce(t, isolation) })
	}
}

func openAtOnce(t *testing.T, isolation string) {
	name, _ := pgtest.Schema(t)
	d := dsn(t)
	if isolation != "" {
		d = withParam(t, d, "default_transaction_isolation", isolation)
	}
	allOpen(t, name, 6, func(int) (string, postgres.Options) { return d, postgres.Options{Schema: name} })
}

// allOpen opens n stores at once, the i-th with how(i), and fails t
// unless every one opened and schema has this myelin's layout.
func allOpen(t *testing.T, schema string, n int, how func(i int) (string, postgres.Options)) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d, opts := how(i)
			s, err := postgres.Open(context.Background(), d, opts)
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
	if v := layoutOf(t, schema); v != postgres.Layout {
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

// A schema named with characters search_path would read otherwise — a
// space, capitals, a comma — is the one the tables are made and used in.
func TestASchemaOfAnyNameIsTheOneUsed(t *testing.T) {
	for _, odd := range []string{"Team A", "a,b", `q"uote`} {
		t.Run(odd, func(t *testing.T) {
			base, _ := pgtest.Schema(t)
			name := odd + " " + base
			t.Cleanup(func() { exec(t, base, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`) })
			s, err := postgres.Open(context.Background(), dsn(t), postgres.Options{Schema: name})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Create(context.Background(), history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := connect(t, base).QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{name, "conversations"}.Sanitize()).Scan(&n); err != nil || n != 1 {
				t.Fatalf("%d conversations in schema %q, %v; want 1", n, name, err)
			}
		})
	}
}

// A URL whose search_path names no schema that exists is an error at Open
// that says so, naming the search_path, not the server's "no schema has
// been selected to create in" — also with a pool of one connection.
func TestASearchPathOfNoSchemaThatExistsIsAClearError(t *testing.T) {
	_, err := postgres.Open(context.Background(), withParam(t, withParam(t, dsn(t), "pool_max_conns", "1"), "search_path", "nosuchschema"), postgres.Options{})
	want := `the connection's search_path ("nosuchschema") names no schema that exists`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v; want %q", err, want)
	}
}

// Processes that name one schema in different ways — postgres.Options.Schema,
// the URL's search_path — and open a new database at once also wait for
// each other's migration: every one opens, and the layout is made once.
func TestProcessesNamingOneSchemaDifferentlyAllOpenIt(t *testing.T) {
	name, byURL := pgtest.Schema(t)
	d := dsn(t)
	allOpen(t, name, 8, func(i int) (string, postgres.Options) {
		if i%2 == 1 {
			return byURL, postgres.Options{}
		}
		return d, postgres.Options{Schema: name}
	})
}
