package sqlite

import (
	"bytes"
	"context"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// A mark without a conversation is refused, in a store made at layout 8
// and in one brought to it from 7: layout 7's table (without rowids) had
// its key NOT NULL by SQLite's rule; a table with rowids lets a TEXT
// PRIMARY KEY be NULL (and a NULL foreign key is not checked) unless it
// says NOT NULL (found by the review of layout 8).
func TestAMarkWithoutAConversationIsRefused(t *testing.T) {
	w := openStore(t, markedStore(t, 1, 0))
	for _, path := range []string{w.path, storeOfLayout(t, "layout7.sql")} {
		s := w
		if path != w.path {
			s = openStore(t, path)
		}
		if _, err := s.db.Exec(`INSERT INTO marks (conversation, start, row_crc, crc, facts) VALUES (NULL, 1, 0, 0, X'')`); err == nil {
			t.Errorf("%s: a mark of conversation NULL was stored", path)
		}
	}
}

// A fork marked among its base's messages (row_crc noRow), read through
// its base by a store that read it before: after another opening's
// append it reads the same facts, after that opening's SetMark of other
// facts as long at the same place the new ones, and damage is reported to
// it (written by the review of layout 8).
func TestAForksMarkThroughItsBaseIsReadAnewWhenChangedAndItsDamageReported(t *testing.T) {
	path := markedStore(t, 10, 0)
	w := openStore(t, path)
	ctx := context.Background()
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, "f", userText("f 1")); err != nil {
		t.Fatal(err)
	}
	kept := bigFacts('f', 20000)
	if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: kept}); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, path)
	if m, _, err := r.Marked(ctx, "f"); err != nil || !bytes.Equal(m.Facts, kept) {
		t.Fatalf("first read %v", err)
	}
	if err := w.Append(ctx, "f", userText("f 2")); err != nil {
		t.Fatal(err)
	}
	if m, msgs, err := r.Marked(ctx, "f"); err != nil || !bytes.Equal(m.Facts, kept) || len(msgs) != 6 {
		t.Fatalf("after an append: %d msgs, %v", len(msgs), err)
	}
	other := bigFacts('g', len(kept))
	if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: other}); err != nil {
		t.Fatal(err)
	}
	if m, _, err := r.Marked(ctx, "f"); err != nil || !bytes.Equal(m.Facts, other) {
		t.Fatalf("after another's SetMark: the table's facts %v, %v", bytes.Equal(m.Facts, other), err)
	}
	if err := w.Append(ctx, "f", userText("f 3")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(`UPDATE marks SET crc = crc + 1 WHERE conversation = 'f'`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Marked(ctx, "f"); err == nil {
		t.Fatal("a damaged fork's mark was not reported to its keeper")
	}
}

// A layout-7 store holding a mark whose conversation is gone (written
// with foreign keys off: a tool, a restore) opens at layout 8, the mark
// dropped: copied into the table that references conversations, it
// failed the store's opening (found by the review of layout 8).
func TestAnOrphanMarkIsDroppedWhenALayout7StoreIsBroughtTo8(t *testing.T) {
	path := storeOfLayout(t, "layout7.sql")
	damage(t, path, `PRAGMA foreign_keys = OFF; INSERT INTO marks (conversation, start, facts, row_crc, crc) VALUES ('gone', 1, X'', 0, 0);`)
	s, err := Open(path)
	if err != nil {
		t.Fatalf("opening a layout-7 store with an orphan mark: %v", err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM marks WHERE conversation = 'gone'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the orphan mark is kept (%d, %v)", n, err)
	}
}
