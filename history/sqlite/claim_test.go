package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

func userText(text string) history.Message {
	return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: text}}}
}

// Another process holding the write lock makes Append wait (the busy
// timeout), not fail at once with SQLITE_BUSY (issue 10 §4): the
// transaction takes the lock as it begins.
func TestAppendWaitsForAWriteLockHeldByAnotherConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	_ = s.Create(ctx, history.Conversation{ID: "c"})
	if _, err := s.Messages(ctx, "c"); err != nil { // a read first, as a turn does
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `UPDATE conversations SET updated = 'x'`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Append(ctx, "c", userText("waited")) }()
	select {
	case err := <-done:
		t.Fatalf("Append returned while the lock was held: %v", err)
	case <-time.After(300 * time.Millisecond): // it waits: let the lock go
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Append failed instead of waiting for the lock: %v", err)
	}
}

// A store of layout 1, 2, 3, 4, 5, 6 or 7 is brought to layout 8 when
// opened, its messages kept, checksummed and counted, its records' last
// update times checksummed as they were, layout 7's mark copied byte for
// byte with its checksums: they read back, and a new one is
// appended after them; a conversation linked to a parent's call, a fork
// sharing the old conversation's messages, and a mark, can then be made
// beside them, with the tables, columns and indexes a new store has; and
// a last update time changed behind the store's back is then reported.
func TestAnOlderLayoutIsBroughtToLayout8(t *testing.T) {
	fresh := openStore(t, filepath.Join(t.TempDir(), "new.db"))
	want := layoutOf(t, fresh.db)
	for _, fixture := range []string{"layout1.sql", "layout2.sql", "layout3.sql", "layout4.sql", "layout5.sql", "layout6.sql", "layout7.sql"} {
		t.Run(fixture, func(t *testing.T) {
			path := storeOfLayout(t, fixture)
			s := openStore(t, path)
			ctx := context.Background()
			msgs, err := s.Messages(ctx, "old")
			if err != nil || len(msgs) != 1 || msgs[0].Parts[0].Text != "hello" {
				t.Fatalf("messages %+v, %v", msgs, err)
			}
			h, err := s.Claim(ctx, "old", history.NewHolder(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(history.Writing(ctx, h), "old", history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}}); err != nil {
				t.Fatal(err)
			}
			if c, err := openStore(t, path).Get(ctx, "old"); err != nil || c.Messages != 2 {
				t.Fatalf("conversation %+v, %v", c, err)
			}
			var version int
			if err := s.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != 8 {
				t.Fatalf("layout %d, %v", version, err)
			}
			if got := layoutOf(t, s.db); got != want {
				t.Fatalf("the upgraded store's columns and indexes are\n%s\nand a new store's\n%s", got, want)
			}
			f, err := s.Fork(ctx, history.Conversation{ID: "fork", Base: "old", BaseAt: 2})
			if err != nil || f.Base != "old" || f.BaseAt != 2 || f.Messages != 2 {
				t.Fatalf("fork %+v, %v", f, err)
			}
			if msgs, err := openStore(t, path).Messages(ctx, "fork"); err != nil || len(msgs) != 2 || msgs[1].Parts[0].Text != "hi" {
				t.Fatalf("the fork's messages %+v, %v", msgs, err)
			}
			if fixture == "layout7.sql" {
				m, msgs, err := openStore(t, path).Marked(ctx, "marked")
				if err != nil || m.From != 2 || string(m.Facts) != "the facts kept" || len(msgs) != 1 || msgs[0].Parts[0].Text != "three" {
					t.Fatalf("layout 7's mark reads back as %+v with %d messages, %v", m, len(msgs), err)
				}
			}
			if m, msgs, err := openStore(t, path).Marked(ctx, "old"); err != nil || m.From != 0 || len(msgs) != 2 {
				t.Fatalf("an upgraded conversation has the mark %+v and %d messages, %v; want none and 2", m, len(msgs), err)
			}
			if err := s.SetMark(history.Writing(ctx, h), "old", history.Mark{From: 1, Facts: []byte("f")}); err != nil {
				t.Fatal(err)
			}
			if m, msgs, err := openStore(t, path).Marked(ctx, "old"); err != nil || m.From != 1 || string(m.Facts) != "f" || len(msgs) != 1 || msgs[0].Parts[0].Text != "hi" {
				t.Fatalf("a mark set after the upgrade reads back as %+v with %d messages, %v", m, len(msgs), err)
			}
			if err := s.Create(ctx, history.Conversation{ID: "child", Parent: "old", ParentCall: "call_1"}); err != nil {
				t.Fatal(err)
			}
			kids, err := openStore(t, path).Children(ctx, "old")
			if err != nil || len(kids) != 1 || kids[0].ID != "child" || kids[0].ParentCall != "call_1" {
				t.Fatalf("children %+v, %v", kids, err)
			}
			s.Close()
			damage(t, path, `UPDATE conversations SET updated = '2027-01-01T00:00:00Z' WHERE id = 'old'`)
			if _, err := openStore(t, path).Get(ctx, "old"); !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "last update time") {
				t.Fatalf("a changed last update time read back: %v", err)
			}
		})
	}
}

// storeOfLayout is a store at a new path made by fixture's script
// (testdata), not opened.
func storeOfLayout(t *testing.T, fixture string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.db")
	script, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(script)); err != nil {
		t.Fatal(err)
	}
	return path
}

// layoutOf is a store's tables, its conversations' and marks' columns
// and its indexes, as text.
func layoutOf(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT 'column ' || name || ' ' || type || ' ' || "notnull" || ' ' || COALESCE(dflt_value, '') FROM pragma_table_info('conversations')
		UNION ALL SELECT 'marks column ' || name || ' ' || type || ' ' || "notnull" || ' ' || pk || ' ' || cid FROM pragma_table_info('marks')
		UNION ALL SELECT 'table ' || name || ' ' || (sql LIKE '%WITHOUT ROWID%') FROM sqlite_master WHERE type = 'table'
		UNION ALL SELECT 'index ' || name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
