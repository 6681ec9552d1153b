package sqlite

// Tests of the guards of the marks (mark.go) that the reads of a mark
// rely on: each fails, or panics, without the guard it names.

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/storetest"
)

// forkedStore is a new store at a path of its own holding conversation c
// of 10 numbered messages and f forked from it at 8 with one message of
// its own ("f 1", numbered 9), f marked from from with facts "f's"
// (unless from is 0), closed.
func forkedStore(t *testing.T, from int) string {
	t.Helper()
	path := markedStore(t, 10, 0)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "f", userText("f 1")); err != nil {
		t.Fatal(err)
	}
	if from > 0 {
		if err := s.SetMark(ctx, "f", history.Mark{From: from, Facts: []byte("f's")}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// rowBehind is the statement that adds to conversation id a row numbered
// seq behind the store's back, with its checksum right.
func rowBehind(id string, seq int) string {
	raw := []byte(`{"role":"user","parts":[{"type":"text","text":"behind"}]}`)
	return `INSERT INTO messages (conversation, seq, message, crc) VALUES ('` + id + `', ` + strconv.Itoa(seq) + `, CAST('` + string(raw) + `' AS BLOB), ` +
		strconv.FormatInt(record.MessageChecksum(id, seq, raw), 10) + `)`
}

// A store opened afresh counts a fork's rows for Marked as Messages does,
// where the mark's place is among the messages it shares with its base
// (or it has none): a row added behind its back past a conversation's
// count, or numbered where its own cannot be (at or below its base_at),
// is damage for both — the fork's own, and its base's where the read
// takes rows from it.
func TestAFreshMarkedOfAForkCountsItsRowsAsMessages(t *testing.T) {
	for _, tc := range []struct{ name, damage string }{
		{"a row of its own past its count", rowBehind("f", 10)},
		{"a row of its own at or below its base_at", rowBehind("f", 2)},
		{"a row of its base past the base's count", rowBehind("c", 11)},
	} {
		for _, from := range []int{0, 4} {
			t.Run(tc.name+", mark from "+strconv.Itoa(from), func(t *testing.T) {
				path := forkedStore(t, from)
				damage(t, path, tc.damage)
				ctx := context.Background()
				if _, err := openStore(t, path).Messages(ctx, "f"); !errors.Is(err, history.ErrDamaged) {
					t.Fatalf("Messages of a store opened afresh: %v; want ErrDamaged (else this test proves nothing)", err)
				}
				if m, msgs, err := openStore(t, path).Marked(ctx, "f"); !errors.Is(err, history.ErrDamaged) {
					t.Fatalf("Marked of a store opened afresh: the mark from %d, %q, %v; want ErrDamaged, as Messages", m.From, texts(msgs), err)
				}
			})
		}
	}
}

// What a store keeps of a conversation read whole is not taken by Marked
// once another opening rewound it and appended past where it was kept:
// the rows after it are read only while the kept tail is the
// conversation's (readTail's moved).
func TestAKeptTailSeesARewindAndAppendsByAnotherOpening(t *testing.T) {
	path := markedStore(t, 10, 0)
	s, other := openStore(t, path), openStore(t, path)
	ctx := context.Background()
	if _, err := s.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Rewind(ctx, "c", 7); err != nil {
		t.Fatal(err)
	}
	if err := other.Append(ctx, "c", userText("n 1"), userText("n 2"), userText("n 3"), userText("n 4")); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, ctx, s, "c", 0, "", numbered(0, 7, "n 1", "n 2", "n 3", "n 4"), "after another opening rewound and appended past the kept end")
}

// The writer's own mark set before the place what the store keeps of the
// conversation starts at is read from the store (ownMarked keeps to what
// it holds).
func TestTheWritersMarkBeforeWhereItsMemoryStartsIsReadFromTheStore(t *testing.T) {
	path := markedStore(t, 10, 6)
	s := openStore(t, path)
	ctx := context.Background()
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	w := history.Writing(ctx, h)
	wantMarked(t, w, s, "c", 6, "f", numbered(6, 10), "the writer's first read")
	if err := s.Append(w, "c", userText("a 1")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(w, "c", history.Mark{From: 2, Facts: []byte("g")}); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, w, s, "c", 2, "g", numbered(2, 10, "a 1"), "after its own mark before what it keeps")
}

// A Marked that finds its conversation gone forgets what the store kept
// of it: one made again under its id, ending in the same row (its bytes
// and checksum), is read as it is, never as what was kept of the one
// deleted.
func TestMarkedOfAConversationGoneForgetsWhatWasKept(t *testing.T) {
	path := markedStore(t, 10, 0)
	s, other := openStore(t, path), openStore(t, path)
	ctx := context.Background()
	if _, err := s.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	var last struct { // the deleted one's last row
		raw []byte
		crc int64
	}
	if err := s.db.QueryRow(`SELECT message, crc FROM messages WHERE conversation = 'c' AND seq = 10`).Scan(&last.raw, &last.crc); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Marked(ctx, "c"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Marked of a conversation deleted by another opening: %v; want ErrNotFound", err)
	}
	if err := other.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := other.Append(ctx, "c", storetest.Numbered("x", 10)...); err != nil {
		t.Fatal(err)
	}
	// its last row as the deleted one's, time and checksum too (the
	// store's memory is checked against the last row's checksum)
	if _, err := other.db.Exec(`UPDATE messages SET message = ?, crc = ? WHERE conversation = 'c' AND seq = 10`, last.raw, last.crc); err != nil {
		t.Fatal(err)
	}
	want := numbered(0, 0, "x 0", "x 1", "x 2", "x 3", "x 4", "x 5", "x 6", "x 7", "x 8", "m 9")
	wantMarked(t, ctx, s, "c", 0, "", want, "the conversation made again under its id")
}

// A fork's mark among the messages it shares with its base (set over no
// row of its own) left past its end by a rewind that did not delete it
// (a myelin of layout 6 still running) reads as no mark, every message
// read (checkMark's place past the count).
func TestAForksMarkLeftPastItsEndReadsAsNone(t *testing.T) {
	path := forkedStore(t, 4)
	s := openStore(t, path)
	ctx := context.Background()
	var left struct {
		facts    []byte
		row, crc int64
	}
	if err := s.db.QueryRow(`SELECT facts, row_crc, crc FROM marks WHERE conversation = 'f'`).Scan(&left.facts, &left.row, &left.crc); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rewind(ctx, "f", 2); err != nil {
		t.Fatal(err)
	}
	// the mark as the rewind left it, had it not deleted it
	if _, err := s.db.Exec(`INSERT INTO marks (conversation, start, facts, row_crc, crc) VALUES ('f', 4, ?, ?, ?)`, left.facts, left.row, left.crc); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, ctx, openStore(t, path), "f", 0, "", numbered(0, 2), "a fresh opening")
}

// A SetMark waiting behind another SetMark (which waits for the write
// lock another process holds) returns when its context ends, as an
// Append does, not when the one before it is done.
func TestSetMarkWaitingBehindAnotherHonoursItsContext(t *testing.T) {
	for _, second := range []string{"Append", "SetMark"} {
		t.Run(second, func(t *testing.T) {
			path := markedStore(t, 5, 0)
			s := openStore(t, path)
			ctx := context.Background()
			other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			conn, err := other.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
				t.Fatal(err)
			}
			first := make(chan error, 1)
			go func() { first <- s.SetMark(ctx, "c", history.Mark{From: 2, Facts: []byte("a")}) }()
			time.Sleep(100 * time.Millisecond) // the first waits for the lock (else this test proves nothing)
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			if second == "Append" {
				err = s.Append(short, "c", userText("x"))
			} else {
				err = s.SetMark(short, "c", history.Mark{From: 3, Facts: []byte("b")})
			}
			select {
			case ferr := <-first:
				t.Fatalf("the %s with a deadline returned (%v) only once the SetMark before it was done (%v)", second, err, ferr)
			default:
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the %s with a deadline, behind a SetMark waiting for the write lock: %v; want its deadline", second, err)
			}
			if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
				t.Fatal(err)
			}
			if err := <-first; err != nil {
				t.Fatalf("the first SetMark, once the lock is let go: %v", err)
			}
		})
	}
}

// A Delete of a marked conversation by a myelin of layout 6 still running
// when the store was brought to 7 — which deletes the conversation's rows
// it knows of, then its record, on a connection enforcing foreign keys —
// takes the mark with it (the marks' reference cascades), as the store
// opens its connections with foreign keys enforced.
func TestALayout6DeleteOfAMarkedConversationTakesItsMark(t *testing.T) {
	path := markedStore(t, 10, 6)
	s := openStore(t, path)
	var on int
	if err := s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&on); err != nil || on != 1 {
		t.Fatalf("the store's connection has foreign_keys %d (%v); want 1: a cascade would not take effect", on, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// layout 6's deleteOne: every table it knows of, then the record
	if _, err := db.Exec(`BEGIN;
		DELETE FROM kept WHERE conversation = 'c';
		DELETE FROM claims WHERE conversation = 'c';
		DELETE FROM messages WHERE conversation = 'c';
		DELETE FROM conversations WHERE id = 'c';
		COMMIT`); err != nil {
		t.Fatalf("a layout-6 delete of a marked conversation: %v", err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM marks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d marks left after the delete, %v", n, err)
	}
	if _, _, err := s.Marked(context.Background(), "c"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Marked of the deleted conversation: %v; want ErrNotFound", err)
	}
}

// A store made by an unreleased layout-7 build has the marks table
// without ON DELETE CASCADE (CREATE TABLE IF NOT EXISTS never changed
// it). Brought to layout 8, its marks are copied into layout 8's table,
// which cascades: its mark reads back, this build's Delete, SetMark and
// Marked work on it, and a layout-6 process's delete of a marked
// conversation (refused on the old table) takes the mark with it.
func TestAStoreWhoseMarksDoNotCascadeIsBroughtToOneWhoseMarksDo(t *testing.T) {
	path := markedStore(t, 10, 6)
	damage(t, path, `PRAGMA foreign_keys = OFF;
		CREATE TABLE marks_old (
			conversation TEXT PRIMARY KEY REFERENCES conversations(id),
			start INTEGER NOT NULL, facts BLOB NOT NULL, row_crc INTEGER NOT NULL, crc INTEGER NOT NULL
		) WITHOUT ROWID;
		INSERT INTO marks_old (conversation, start, facts, row_crc, crc) SELECT conversation, start, facts, row_crc, crc FROM marks;
		DROP TABLE marks;
		ALTER TABLE marks_old RENAME TO marks;
		PRAGMA user_version = 7;`)
	s := openStore(t, path)
	ctx := context.Background()
	wantMarked(t, ctx, s, "c", 6, "f", numbered(6, 10), "an old layout-7 store brought to 8")
	if err := s.SetMark(ctx, "c", history.Mark{From: 2, Facts: []byte("g")}); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, ctx, openStore(t, path), "c", 2, "g", numbered(2, 10), "after SetMark")
	if err := s.Create(ctx, history.Conversation{ID: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "d", userText("d 1"), userText("d 2")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(ctx, "d", history.Mark{From: 2, Facts: []byte("h")}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`BEGIN; DELETE FROM kept WHERE conversation = 'd'; DELETE FROM claims WHERE conversation = 'd';
		DELETE FROM messages WHERE conversation = 'd'; DELETE FROM conversations WHERE id = 'd'; COMMIT`); err != nil {
		t.Fatalf("a layout-6 delete of a marked conversation in the upgraded store: %v", err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatalf("this build's Delete on the upgraded store: %v", err)
	}
	if _, _, err := s.Marked(ctx, "c"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Marked after Delete: %v", err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM marks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d marks left after both deletes, %v", n, err)
	}
}
