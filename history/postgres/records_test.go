package postgres_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/history/storetest"
)

// The same conversation kept in SQLite and in Postgres is the same bytes,
// message by message, and reads back as the same messages: a request built
// from either store is the same (contract §7). Messages read from SQLite
// and appended to Postgres (as a conversation moved between them) read
// back as they were.
func TestAConversationIsTheSameBytesInPostgresAsInSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	lite, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	open, name := opener(t, nil)
	pg := open()
	want := storetest.SampleMessages()
	for _, s := range []history.Store{lite, pg} {
		if err := s.Create(ctx, history.Conversation{ID: "c", System: "be brief"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "c", want...); err != nil {
			t.Fatal(err)
		}
	}
	fromLite, err := lite.Messages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	fromPG, err := open().Messages(ctx, "c") // another process's view
	if err != nil {
		t.Fatal(err)
	}
	liteRaw := rawSQLite(t, path)
	pgRaw := rawPostgres(t, name, "c")
	if len(liteRaw) != len(want) || len(pgRaw) != len(want) {
		t.Fatalf("%d rows in SQLite, %d in Postgres; want %d", len(liteRaw), len(pgRaw), len(want))
	}
	for i := range want {
		// each store stamps its own time: with the same one, the bytes are the same
		m := fromPG[i]
		m.Time = fromLite[i].Time
		again, err := history.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, liteRaw[i]) {
			t.Fatalf("message %d: Postgres's, with SQLite's time, is\n%s\nSQLite keeps\n%s", i+1, again, liteRaw[i])
		}
		if own, _ := history.EncodeMessage(fromPG[i]); !bytes.Equal(own, pgRaw[i]) {
			t.Fatalf("message %d: Postgres keeps\n%s\nand reads it back as\n%s", i+1, pgRaw[i], own)
		}
		if !reflect.DeepEqual(m, fromLite[i]) {
			t.Fatalf("message %d reads back from Postgres as\n%+v\nfrom SQLite as\n%+v", i+1, m, fromLite[i])
		}
	}
	// moved from SQLite to Postgres, read back the same
	if err := pg.Create(ctx, history.Conversation{ID: "moved"}); err != nil {
		t.Fatal(err)
	}
	if err := pg.Append(ctx, "moved", fromLite...); err != nil {
		t.Fatal(err)
	}
	moved, err := open().Messages(ctx, "moved")
	if err != nil {
		t.Fatal(err)
	}
	for i := range moved {
		moved[i].Time = fromLite[i].Time
	}
	if !reflect.DeepEqual(moved, fromLite) {
		t.Fatalf("moved messages read back as\n%+v\nwant\n%+v", moved, fromLite)
	}
}

// rawSQLite is the stored bytes of conversation c's messages in the
// SQLite store at path.
func rawSQLite(t *testing.T, path string) [][]byte {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT message FROM messages WHERE conversation = 'c' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	return column(t, rows)
}

// rawPostgres is the stored bytes of conversation id's messages in schema.
func rawPostgres(t *testing.T, schema, id string) [][]byte {
	t.Helper()
	rows, err := connect(t, schema).Query(context.Background(), `SELECT message FROM messages WHERE conversation = $1 ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	return column(t, rows)
}

// column is the one column of bytes of rows (database/sql's or pgx's).
func column(t *testing.T, rows interface {
	Next() bool
	Scan(...any) error
}) [][]byte {
	t.Helper()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// The Postgres store, too, keeps what a request adds, not the whole of it.
func TestThePostgresStoreKeepsARequestByWhatItAdds(t *testing.T) {
	open, name := opener(t, nil)
	storetest.KeepsRequestsByWhatTheyAdd(t, open(), func() int {
		var kept int
		if err := connect(t, name).QueryRow(context.Background(), `SELECT SUM(length(tail)) FROM requests`).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		return kept
	})
}

// Damage done to the tables by something other than myelin is reported,
// naming the store, the conversation and the message (the cases SQL of
// both stores can express are the suite's).
func TestDamagedRecordsAreReportedNotRead(t *testing.T) {
	for _, tc := range []struct {
		name, sql string
		wants     []string
	}{
		{"a byte of a message changed", `UPDATE messages SET message = convert_to(replace(convert_from(message, 'UTF8'), 'Reading it.', 'Reeding it.'), 'UTF8') WHERE seq = 2`,
			[]string{"conversation c, message 2 is damaged", "checksum"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			open, name := opener(t, nil)
			s := open()
			if err := s.Create(ctx, history.Conversation{ID: "c", System: "be brief"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, "c", storetest.SampleMessages()...); err != nil {
				t.Fatal(err)
			}
			exec(t, name, tc.sql)
			msgs, err := open().Messages(ctx, "c")
			if err == nil {
				t.Fatalf("read %d messages without an error", len(msgs))
			}
			if !errors.Is(err, history.ErrDamaged) {
				t.Errorf("error %q does not wrap ErrDamaged", err)
			}
			for _, want := range append(tc.wants, "history store postgres://") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
