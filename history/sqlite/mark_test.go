package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/storetest"
)

// markedStore is a new store at a path of its own holding conversation c
// of n numbered messages ("m 0" …), marked from from with facts "f"
// (unless from is 0), closed.
func markedStore(t testing.TB, n, from int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.Numbered("m", n)...); err != nil {
		t.Fatal(err)
	}
	if from > 0 {
		if err := s.SetMark(ctx, "c", history.Mark{From: from, Facts: []byte("f")}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// texts are the first part's text of each message.
func texts(msgs []history.Message) string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Parts[0].Text
	}
	return strings.Join(out, ", ")
}

// numbered is the texts of messages "m from" to "m to-1", then those of
// more.
func numbered(from, to int, more ...string) string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint("m ", i))
	}
	return strings.Join(append(out, more...), ", ")
}

// wantMarked fails t unless Marked of conversation id in s under ctx
// gives the mark from from with facts, and messages of texts want.
func wantMarked(t *testing.T, ctx context.Context, s *Store, id string, from int, facts, want, when string) {
	t.Helper()
	m, msgs, err := s.Marked(ctx, id)
	if err != nil {
		t.Fatalf("%s: Marked: %v", when, err)
	}
	if m.From != from || string(m.Facts) != facts || texts(msgs) != want {
		t.Fatalf("%s: Marked gives the mark from %d (facts %q) and the messages\n\t%s\nwant the mark from %d (facts %q) and\n\t%s", when, m.From, m.Facts, texts(msgs), from, facts, want)
	}
}

// corrupt changes message seq of conversation id behind the store's back,
// without its checksum: a read of it reports damage.
func corrupt(t *testing.T, s *Store, id string, seq int) {
	t.Helper()
	if _, err := s.db.Exec(`UPDATE messages SET message = CAST('{"role":"user","parts":[{"type":"text","text":"changed"}]}' AS BLOB) WHERE conversation = ? AND seq = ?`, id, seq); err != nil {
		t.Fatal(err)
	}
}

// A store opened afresh reads, for Marked, the mark and the rows from its
// place on only: a row before it damaged behind the store's back is not
// read (Messages reports it).
func TestAFreshOpeningsMarkedReadsNoRowBeforeTheMark(t *testing.T) {
	path := markedStore(t, 10, 6)
	damage(t, path, `UPDATE messages SET message = CAST('not json' AS BLOB) WHERE seq = 2`)
	s := openStore(t, path)
	ctx := context.Background()
	wantMarked(t, ctx, s, "c", 6, "f", numbered(6, 10), "a fresh opening")
	if _, err := openStore(t, path).Messages(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("Messages of the damaged conversation: %v; want ErrDamaged (else this test proves nothing)", err)
	}
}

// What a Marked read took from the mark's place on is kept: the next
// Marked reads only the rows added since (a kept row changed behind the
// store's back is not read again), and Messages still reads every
// message, as a store opened afresh does.
func TestMarkedKeepsItsTailAndReadsOnlyTheRowsAddedSince(t *testing.T) {
	path := markedStore(t, 10, 6)
	s, other := openStore(t, path), openStore(t, path)
	ctx := context.Background()
	wantMarked(t, ctx, s, "c", 6, "f", numbered(6, 10), "the first read")
	if err := other.Append(ctx, "c", userText("new 1"), userText("new 2")); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, ctx, s, "c", 6, "f", numbered(6, 10, "new 1", "new 2"), "after another opening appended")
	msgs, err := s.Messages(ctx, "c")
	if err != nil || texts(msgs) != numbered(0, 10, "new 1", "new 2") {
		t.Fatalf("Messages after Marked kept a tail: %s, %v; want every message", texts(msgs), err)
	}
	wantMarked(t, ctx, s, "c", 6, "f", numbered(6, 10, "new 1", "new 2"), "after Messages read it whole")

	// a store holding only a tail reads only what was added since
	s = openStore(t, path)
	wantMarked(t, ctx, s, "c", 6, "f", numbered(6, 10, "new 1", "new 2"), "a fresh opening")
	corrupt(t, other, "c", 8)
	if err := other.Append(ctx, "c", userText("new 3")); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, ctx, s, "c", 6, "f", numbered(6, 10, "new 1", "new 2", "new 3"), "a row it kept changed behind its back, and one appended")
	if _, err := s.Messages(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("Messages of a store holding a tail, with a row changed behind its back: %v; want ErrDamaged, read whole", err)
	}
}

// A mark set earlier than the place what is kept begins at (by another
// opening) is read with the messages from it, in the same transaction.
func TestAMarkMovedBeforeWhatIsKeptIsReadFromItsPlace(t *testing.T) {
	path := markedStore(t, 10, 6)
	s, other := openStore(t, path), openStore(t, path)
	ctx := context.Background()
	wantMarked(t, ctx, s, "c", 6, "f", numbered(6, 10), "the first read")
	if err := other.SetMark(ctx, "c", history.Mark{From: 2, Facts: []byte("earlier")}); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, ctx, s, "c", 2, "earlier", numbered(2, 10), "a mark moved back")
	if err := other.SetMark(ctx, "c", history.Mark{}); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, ctx, s, "c", 0, "", numbered(0, 10), "the mark dropped")
}

// Under its claim, the writer that appended last reads its mark and
// messages without a query, after its own SetMark too: a row put behind
// the store's back is not seen by it (as no writer can put one while the
// claim is held), while a reader without the claim reads it. A fresh
// opening's first Marked keeps the tail, and the writer's appends are
// kept after it.
func TestTheWritersMarkedUnderItsClaimMakesNoQuery(t *testing.T) {
	path := markedStore(t, 10, 6)
	s := openStore(t, path)
	ctx := context.Background()
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	w := history.Writing(ctx, h)
	wantMarked(t, w, s, "c", 6, "f", numbered(6, 10), "the writer's first read")
	if err := s.Append(w, "c", userText("a 1"), userText("a 2")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(w, "c", history.Mark{From: 11, Facts: []byte("g")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(w, "c", userText("a 3")); err != nil {
		t.Fatal(err)
	}
	behind := []byte(`{"role":"user","parts":[{"type":"text","text":"behind"}]}`)
	if _, err := s.db.Exec(`INSERT INTO messages (conversation, seq, message, crc) VALUES ('c', 14, ?, ?); UPDATE conversations SET messages = 14 WHERE id = 'c'`, behind, record.MessageChecksum("c", 14, behind)); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, w, s, "c", 11, "g", "a 2, a 3", "the writer after its own mark and append")
	msgs, err := s.Messages(w, "c")
	if err != nil || texts(msgs) != numbered(0, 10, "a 1", "a 2", "a 3", "behind") {
		t.Fatalf("the writer's Messages of a conversation kept from its mark: %s, %v; want every message, read", texts(msgs), err)
	}
	wantMarked(t, ctx, s, "c", 11, "g", "a 2, a 3, behind", "a reader without the claim")
}

// A mark changed behind the writer's back (as another opening may while
// the writer's claim has run out) is read again once the writer's next
// append finds it changed in its transaction.
func TestAMarkChangedBehindTheWritersBackIsReadAfterItsNextAppend(t *testing.T) {
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
	markBehind(t, s, "c", 8, "other")
	wantMarked(t, w, s, "c", 6, "f", numbered(6, 10, "a 1"), "the writer, before its next append (trusted as its messages are)")
	if err := s.Append(w, "c", userText("a 2")); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, w, s, "c", 8, "other", numbered(8, 10, "a 1", "a 2"), "the writer after its next append")
}

// markBehind writes conversation id's mark from place from with facts
// behind store s's back, as SetMark writes it.
func markBehind(t *testing.T, s *Store, id string, from int, facts string) {
	t.Helper()
	var row int64
	if err := s.db.QueryRow(rowCRCSQL, id, from).Scan(&row); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`INSERT OR REPLACE INTO marks (conversation, start, facts, row_crc, crc) VALUES (?, ?, CAST(? AS BLOB), ?, ?)`,
		id, from, facts, row, markChecksum(id, from, row, []byte(facts))); err != nil {
		t.Fatal(err)
	}
}

// A mark whose place, row or facts no longer match their checksum is
// damage, reported (a mark is never taken for true unless it is whole);
// SetMark replaces it.
func TestADamagedMarkIsReportedAndSetMarkReplacesIt(t *testing.T) {
	for _, tc := range []struct{ name, damage, id string }{
		{"its facts changed", `UPDATE marks SET facts = CAST('g' AS BLOB)`, "c"},
		{"its place changed", `UPDATE marks SET start = 5`, "c"},
		{"the row it names changed", `UPDATE marks SET row_crc = row_crc + 1`, "c"},
		{"its checksum changed", `UPDATE marks SET crc = (SELECT crc FROM marks) + 1`, "c"},
		// d holds the same messages as c: the mark is whole but c's
		{"another conversation's", `UPDATE marks SET conversation = 'd'`, "d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := markedStore(t, 10, 6)
			ctx := context.Background()
			if tc.id != "c" {
				s := openStore(t, path)
				if err := s.Create(ctx, history.Conversation{ID: tc.id}); err != nil {
					t.Fatal(err)
				}
				if err := s.Append(ctx, tc.id, storetest.Numbered("m", 10)...); err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
			damage(t, path, tc.damage)
			s := openStore(t, path)
			if m, msgs, err := s.Marked(ctx, tc.id); !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "mark") {
				t.Fatalf("Marked of a damaged mark: %+v, %d messages, %v; want ErrDamaged naming the mark", m, len(msgs), err)
			}
			if err := s.SetMark(ctx, tc.id, history.Mark{From: 7, Facts: []byte("new")}); err != nil {
				t.Fatal(err)
			}
			wantMarked(t, ctx, s, tc.id, 7, "new", numbered(7, 10), "a damaged mark replaced")
		})
	}
}

// A whole mark left behind by a rewind that did not delete it (a myelin
// of layout 6 still running when the store was brought to 7) is not the
// conversation's: past its end, or over a row that is no longer the one
// it was set over (moved to the branch, another appended in its place),
// it reads as no mark, every message read — never as a mark whose facts
// are of messages no longer there. One whose row is still there (a
// rewind past it) was set over messages that are all still there. So
// too to a store that read the mark before the rewind and keeps it (the
// mark in the table is the one it keeps: its facts are not read again).
func TestAMarkLeftByARewindThatKeptItReadsAsNone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		at       int // the rewind's place
		appended int // messages appended after it
		want     int // the mark read back: 0 none, else from 6
	}{
		{"its place past the end", 4, 0, 0},
		{"its row moved, another in its place", 4, 5, 0},
		{"its place at the rewind's", 6, 0, 6},
		{"its place before the rewind's", 8, 3, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := markedStore(t, 10, 6)
			s := openStore(t, path)
			ctx := context.Background()
			kept := keeper(t, path, 6, []byte("f"))
			var left struct {
				facts    []byte
				row, crc int64
			}
			if err := s.db.QueryRow(`SELECT facts, row_crc, crc FROM marks WHERE conversation = 'c'`).Scan(&left.facts, &left.row, &left.crc); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Rewind(ctx, "c", tc.at); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, "c", storetest.Numbered("new", tc.appended)...); err != nil {
				t.Fatal(err)
			}
			// the mark as the rewind left it, had it not deleted it
			if _, err := s.db.Exec(`INSERT INTO marks (conversation, start, facts, row_crc, crc) VALUES ('c', 6, ?, ?, ?)`, left.facts, left.row, left.crc); err != nil {
				t.Fatal(err)
			}
			all, err := openStore(t, path).Messages(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			facts := ""
			if tc.want > 0 {
				facts = "f"
			}
			wantMarked(t, ctx, openStore(t, path), "c", tc.want, facts, texts(all[tc.want:]), "a fresh opening")
			wantMarked(t, ctx, kept, "c", tc.want, facts, texts(all[tc.want:]), "the store that kept the mark")
		})
	}
}

// A fork marked among the messages it shares with its base is read
// through its base from the mark on, in a store opened afresh, and kept:
// its next Marked reads only its rows added since.
func TestAForksMarkAmongItsBasesMessagesIsReadThroughItAndKept(t *testing.T) {
	path := markedStore(t, 10, 0)
	s := openStore(t, path)
	ctx := context.Background()
	if _, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "f", userText("f 1")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(ctx, "f", history.Mark{From: 4, Facts: []byte("f's")}); err != nil {
		t.Fatal(err)
	}
	fresh := openStore(t, path)
	wantMarked(t, ctx, fresh, "f", 4, "f's", numbered(4, 8, "f 1"), "a fresh opening")
	corrupt(t, s, "c", 5)
	if err := s.Append(ctx, "f", userText("f 2")); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, ctx, fresh, "f", 4, "f's", numbered(4, 8, "f 1", "f 2"), "after its base's row changed behind its back and an append")
	// with no mark, a fork is read whole through its base, as Messages
	// reads it
	if err := s.SetMark(ctx, "f", history.Mark{}); err != nil {
		t.Fatal(err)
	}
	corrupt(t, s, "c", 5) // the store holds it again as it was, for this read
	if _, _, err := openStore(t, path).Marked(ctx, "f"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("Marked of an unmarked fork whose base's row is damaged: %v; want ErrDamaged", err)
	}
}

// Deleting a conversation deletes the marks of its branches deleted with
// it. (The marks table's reference cascades, so this holds without
// Delete's own drop too; the drop is for a store whose table was made by
// an unreleased build without the cascade:
// TestAStoreWhoseMarksDoNotCascadeIsBroughtToOneWhoseMarksDo.)
func TestDeleteTakesTheMarksOfTheBranchesItDeletes(t *testing.T) {
	path := markedStore(t, 10, 6)
	s := openStore(t, path)
	ctx := context.Background()
	b, err := s.Rewind(ctx, "c", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(ctx, b.ID, history.Mark{From: 9, Facts: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(ctx, "c", history.Mark{From: 2, Facts: []byte("c")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatalf("Delete of a marked conversation with a marked branch: %v", err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM marks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d marks left after the delete, %v", n, err)
	}
}

// SetMark, Append and Marked run at once leave what the writer reads of
// its mark as the store holds it: the marks kept in memory follow the
// commits, never an older one kept last — neither by a SetMark committed
// before another nor by a read (the writer's or a reader's without the
// claim) begun before a SetMark and keeping what it read after it. After
// each of its SetMarks, the writer reads the mark it set.
func TestMarksSetWhileTheWriterAppendsAndReadsAreReadAsStored(t *testing.T) {
	for round := range 3 {
		path := markedStore(t, 10, 6)
		s := openStore(t, path)
		ctx := context.Background()
		h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
		if err != nil {
			t.Fatal(err)
		}
		w := history.Writing(ctx, h)
		if _, _, err := s.Marked(w, "c"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var stop atomic.Bool
		errs := make(chan error, 6)
		wg.Add(5)
		go func() {
			defer wg.Done()
			defer stop.Store(true)
			for i := range 200 {
				set := history.Mark{From: 1 + (i*7+round)%10, Facts: []byte(fmt.Sprint("set ", i))}
				if err := s.SetMark(w, "c", set); err != nil {
					errs <- err
					return
				}
				m, _, err := s.Marked(w, "c")
				if err != nil {
					errs <- err
					return
				}
				if m.From != set.From || string(m.Facts) != string(set.Facts) {
					errs <- fmt.Errorf("the writer's Marked after its SetMark %d gives the mark from %d (%q); want from %d (%q)", i, m.From, m.Facts, set.From, set.Facts)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if err := s.Append(history.Lazy(w), "c", userText(fmt.Sprint("a ", i))); err != nil {
					errs <- err
					return
				}
			}
		}()
		for _, read := range []context.Context{w, ctx, ctx} {
			go func() {
				defer wg.Done()
				for !stop.Load() {
					if _, _, err := s.Marked(read, "c"); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		want, wantMsgs, err := openStore(t, path).Marked(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		wantMarked(t, w, s, "c", want.From, string(want.Facts), texts(wantMsgs), fmt.Sprintf("round %d, the writer after it all", round))
	}
}

// A Marked read begun before a SetMark committed, and keeping what it
// read after that SetMark kept its mark, keeps no mark: the writer's next
// Marked reads the one stored, never the older one the read took.
func TestAMarkReadBeforeASetMarkIsNotKeptAfterIt(t *testing.T) {
	path := markedStore(t, 10, 6)
	s := openStore(t, path)
	ctx := context.Background()
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	w := history.Writing(ctx, h)
	if _, _, err := s.Marked(w, "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(w, "c", userText("a 1")); err != nil {
		t.Fatal(err)
	}
	// Marked's steps, with a SetMark between its read and its keep
	s.mu.Lock()
	s.settle("c")
	known, start, tag, gen, mark := s.read["c"], s.start["c"], s.tags["c"], s.markGen, s.marks["c"]
	s.mu.Unlock()
	r, err := s.readMarked(w, "c", true, start, known, tag, mark)
	if err != nil || r.mark.From != 6 {
		t.Fatalf("the read: mark from %d, %v", r.mark.From, err)
	}
	if err := s.SetMark(w, "c", history.Mark{From: 9, Facts: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	s.keep("c", r.start, r.known, r.fresh, r.tag, &r.mark, gen)
	wantMarked(t, w, s, "c", 9, "new", numbered(9, 10, "a 1"), "the writer after the older read kept what it read")
}

// A mark at the end of a conversation keeps no message: a read that
// finds nothing added keeps the mark it read all the same (here after
// the one kept was let go, as a SetMark at the same moment lets it go),
// and the writer's Marked reads nothing back once it has appended after
// it.
func TestAMarkAtTheEndIsKeptWithNoMessage(t *testing.T) {
	path := markedStore(t, 10, 10)
	s := openStore(t, path)
	ctx := context.Background()
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	w := history.Writing(ctx, h)
	wantMarked(t, w, s, "c", 10, "f", "", "the writer's first read")
	s.mu.Lock()
	delete(s.marks, "c")
	s.mu.Unlock()
	wantMarked(t, w, s, "c", 10, "f", "", "the writer's second read, nothing added")
	if err := s.Append(w, "c", userText("a 1")); err != nil {
		t.Fatal(err)
	}
	behind := []byte(`{"role":"user","parts":[{"type":"text","text":"behind"}]}`)
	if _, err := s.db.Exec(`INSERT INTO messages (conversation, seq, message, crc) VALUES ('c', 12, ?, ?); UPDATE conversations SET messages = 12 WHERE id = 'c'`, behind, record.MessageChecksum("c", 12, behind)); err != nil {
		t.Fatal(err)
	}
	wantMarked(t, w, s, "c", 10, "f", "a 1", "the writer after its append (no query)")
	wantMarked(t, ctx, s, "c", 10, "f", "a 1, behind", "a reader without the claim")
}
