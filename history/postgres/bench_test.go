package postgres_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/history/storetest"
)

// BenchmarkAppend measures one Append of a message under its writer's
// claim — the claim checked under the conversation's row lock in the
// append's transaction — side by side in one run:
//
//   - floor: a SELECT 1 on one connection to the same server, the round
//     trip no write can go below;
//   - postgres, postgres-lazy: the Postgres store's Append, committed
//     waiting for the server's log flush or not (history.Lazy);
//   - sqlite, sqlite-lazy: the SQLite store's, synced or not.
//
// The throwaway cluster of .ci/postgres runs with fsync off, so Postgres's
// synced commit does not wait for a disk there while SQLite's does: compare
// the lazy rows for the stores' own cost. Run:
//
//	eval "$(.ci/postgres start)"
//	go test ./history/postgres -run '^$' -bench Append -count 6
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	msg := storetest.UserText("     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]")
	b.Run("floor", func(b *testing.B) {
		conn, err := pgx.Connect(ctx, pgtest.DSN(b))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		var one int
		for b.Loop() {
			if err := conn.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name string
		lazy bool
		open func(b *testing.B) history.Store
	}{
		{"postgres", false, openBench},
		{"postgres-lazy", true, openBench},
		{"sqlite", false, openSQLiteBench},
		{"sqlite-lazy", true, openSQLiteBench},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := bc.open(b)
			if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
				b.Fatal(err)
			}
			h, err := s.Claim(ctx, "c", history.NewHolder(), time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			w := history.Writing(ctx, h)
			if bc.lazy {
				w = history.Lazy(w)
			}
			for b.Loop() {
				if err := s.Append(w, "c", msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func openBench(b *testing.B) history.Store {
	name, _ := pgtest.Schema(b)
	s, err := postgres.Open(context.Background(), pgtest.DSN(b), postgres.Options{Schema: name})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func openSQLiteBench(b *testing.B) history.Store {
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "h.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkFork measures one Fork of a conversation of 1,000 and of 10,000
// messages at its end, side by side with its floor, a Create of an empty
// conversation (one record written either way): a fork writes one record
// whatever the length of its base, so all three cost the same. Run:
//
//	eval "$(.ci/postgres start)"
//	go test ./history/postgres -run '^$' -bench Fork -count 6
func BenchmarkFork(b *testing.B) {
	ctx := context.Background()
	b.Run("floor-create", func(b *testing.B) {
		s := openBench(b)
		n := 0
		for b.Loop() {
			n++
			if err := s.Create(ctx, history.Conversation{ID: "c" + strconv.Itoa(n)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, size := range []int{1000, 10000} {
		b.Run("fork-"+strconv.Itoa(size), func(b *testing.B) {
			s := openBench(b)
			if err := s.Create(ctx, history.Conversation{ID: "base"}); err != nil {
				b.Fatal(err)
			}
			for done := 0; done < size; done += 500 {
				if err := s.Append(ctx, "base", storetest.Numbered("base", 500)...); err != nil {
					b.Fatal(err)
				}
			}
			f := s.(history.Brancher)
			n := 0
			for b.Loop() {
				n++
				if _, err := f.Fork(ctx, history.Conversation{ID: "f" + strconv.Itoa(n), Base: "base", BaseAt: size}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
