package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// correlatedSelectNewTagged is the tagged read as it was before issue 34:
// its subquery named the outer row (c.id), so SQLite ran it once a row.
// Its count of messages appended (c.messages, added since) is read the
// same way in both.
var correlatedSelectNewTagged = `SELECT m.seq, m.message, m.crc, c.base, c.base_at, COALESCE((SELECT crc FROM messages WHERE conversation = c.id AND seq = ?), ` + fmt.Sprint(noRow) + `), c.messages
			FROM conversations c LEFT JOIN messages m ON m.conversation = c.id AND m.seq > ? WHERE c.id = ? ORDER BY m.seq`

func allRows(t *testing.T, db *sql.DB, q string, args ...any) [][]any {
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		v := make([]any, len(cols))
		p := make([]any, len(cols))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			t.Fatal(err)
		}
		out = append(out, v[:7]) // the columns both statements give (selectNewTagged's eighth, the rows below base_at, is TestARowWhereNoneOfItsOwnCanBeIsReportedByARead's)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// heldRow is the checksum of the row holding conversation id's message n,
// found by walking its bases one query at a time (heldCRC's walk, done
// apart): noRow where none does.
func heldRow(t *testing.T, db *sql.DB, id string, n int) int64 {
	t.Helper()
	for range maxBases {
		var crc int64
		err := db.QueryRow(`SELECT crc FROM messages WHERE conversation = ? AND seq = ?`, id, n).Scan(&crc)
		if err == nil {
			return crc
		}
		if err != sql.ErrNoRows {
			t.Fatal(err)
		}
		var base string
		var baseAt int
		err = db.QueryRow(`SELECT base, base_at FROM conversations WHERE id = ?`, id).Scan(&base, &baseAt)
		if err == sql.ErrNoRows || base == "" || n > baseAt || n <= 0 {
			return noRow
		}
		if err != nil {
			t.Fatal(err)
		}
		id = base
	}
	return noRow
}

// spread is the rows of selectNewTagged as the join gave them: the
// conversation's columns of its first row on each message row after it,
// or on one row of NULL messages when none follows.
func spread(rows [][]any) [][]any {
	if len(rows) == 0 {
		return nil
	}
	head := rows[0]
	if len(rows) == 1 {
		return [][]any{head}
	}
	var out [][]any
	for _, r := range rows[1:] {
		out = append(out, append(r[:3:3], head[3:]...))
	}
	return out
}

// The tagged read's new statement gives the rows the old one gave, for
// plain conversations, empty ones, forks, and after rewinds and switches
// — but for its tag's checksum where message n is not the conversation's
// own: the checksum of the row of its bases that holds it.
func TestTheTaggedReadGivesTheRowsOfTheCorrelatedStatement(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	msg := func(i int) history.Message {
		return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprint("m", i)}}}
	}
	for _, id := range []string{"a", "e", "A"} {
		if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if err := s.Append(ctx, "a", msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "a", BaseAt: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Append(ctx, f.ID, msg(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.Rewind(ctx, "a", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "a", msg(200)); err != nil {
		t.Fatal(err)
	}
	ids := []string{"a", "e", "A", f.ID, b.ID, "missing"}
	check := func(stage string) {
		cs, _ := s.List(ctx)
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		for _, id := range ids {
			for n := 0; n <= 12; n++ {
				for after := 0; after <= 12; after++ {
					old := allRows(t, s.db, correlatedSelectNewTagged, n, after, id)
					for _, r := range old {
						// where message n is not its own, the tag is
						// the row's that holds it (heldCRC)
						if r[5] == int64(noRow) {
							r[5] = heldRow(t, s.db, id, n)
						}
					}
					now := spread(allRows(t, s.db, selectNewTagged, n, after, id))
					if !reflect.DeepEqual(old, now) {
						t.Fatalf("%s: conversation %s, tag at %d, after %d: old statement %v, new %v", stage, id, n, after, old, now)
					}
				}
			}
		}
	}
	check("after a fork and rewind")
	if err := s.Switch(ctx, "a", b.ID); err != nil {
		t.Fatal(err)
	}
	check("after a switch")
}
