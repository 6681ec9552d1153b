package sqlite

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// bigFacts are facts of n bytes, all b: a row of the marks table that
// spills onto overflow pages, as the agent's pack does.
func bigFacts(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

// keeper is a second opening of the store at path (not the writer's)
// that has read conversation c's mark with its tail: want its mark from
// from with facts.
func keeper(t *testing.T, path string, from int, facts []byte) *Store {
	t.Helper()
	r := openStore(t, path)
	m, _, err := r.Marked(context.Background(), "c")
	if err != nil || m.From != from || !bytes.Equal(m.Facts, facts) {
		t.Fatalf("the keeper's first read: mark from %d, %d bytes of facts, %v; want from %d, %d bytes", m.From, len(m.Facts), err, from, len(facts))
	}
	return r
}

// A store that read a conversation's mark does not read its facts again
// at its next Marked, after another opening appended to the conversation
// (a takeover), while the mark in the table is the one it keeps: same
// place, checksum, row and length of facts. Its facts changed behind the
// stores' backs to as many other bytes, under the same checksum, stand
// for the read: the keeper hands out the facts it read and checked, with
// the row appended; a store opened afresh reads them, and reports the
// damage.
func TestAMarkKeptIsNotReadAgainWhileItIsTheOneInTheTable(t *testing.T) {
	path := markedStore(t, 10, 0)
	ctx := context.Background()
	w := openStore(t, path)
	facts := bigFacts('f', 20000)
	if err := w.SetMark(ctx, "c", history.Mark{From: 6, Facts: facts}); err != nil {
		t.Fatal(err)
	}
	r := keeper(t, path, 6, facts)
	if err := w.Append(ctx, "c", userText("a 1")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(`UPDATE marks SET facts = ? WHERE conversation = 'c'`, bigFacts('g', len(facts))); err != nil {
		t.Fatal(err)
	}
	m, msgs, err := r.Marked(ctx, "c")
	if err != nil || m.From != 6 || !bytes.Equal(m.Facts, facts) || texts(msgs) != numbered(6, 10, "a 1") {
		t.Fatalf("the keeper after another's append: mark from %d, facts kept %v, messages %s, %v; want the mark it read, not read again, and %s",
			m.From, bytes.Equal(m.Facts, facts), texts(msgs), err, numbered(6, 10, "a 1"))
	}
	if _, _, err := openStore(t, path).Marked(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("a store opened afresh: %v; want ErrDamaged (else this test proves nothing)", err)
	}
}

// A mark another opening set since a store read its own (new facts at
// the same place, even as long; a new place; the same facts set again
// over a row since moved), or deleted by a rewind, is read anew by that
// store's next Marked: never the facts it kept under another mark.
func TestAMarkChangedByAnotherOpeningIsReadAnew(t *testing.T) {
	kept := bigFacts('f', 20000)
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, w *Store) error
		from  int
		facts []byte
		msgs  string
	}{
		{"new facts at the same place", func(ctx context.Context, w *Store) error {
			return w.SetMark(ctx, "c", history.Mark{From: 6, Facts: bigFacts('g', 30000)})
		}, 6, bigFacts('g', 30000), numbered(6, 10, "a 1")},
		{"new facts as long at the same place", func(ctx context.Context, w *Store) error {
			return w.SetMark(ctx, "c", history.Mark{From: 6, Facts: bigFacts('g', len(kept))})
		}, 6, bigFacts('g', len(kept)), numbered(6, 10, "a 1")},
		{"the same facts at a new place", func(ctx context.Context, w *Store) error {
			return w.SetMark(ctx, "c", history.Mark{From: 8, Facts: kept})
		}, 8, kept, numbered(8, 10, "a 1")},
		{"no facts at a new place", func(ctx context.Context, w *Store) error {
			return w.SetMark(ctx, "c", history.Mark{From: 9})
		}, 9, nil, numbered(9, 10, "a 1")},
		{"the mark dropped", func(ctx context.Context, w *Store) error {
			return w.SetMark(ctx, "c", history.Mark{})
		}, 0, nil, numbered(0, 10, "a 1")},
		{"a rewind before it", func(ctx context.Context, w *Store) error {
			_, err := w.Rewind(ctx, "c", 4)
			return err
		}, 0, nil, numbered(0, 4)},
		{"a rewind before it, the same mark set again over the row appended in its place", func(ctx context.Context, w *Store) error {
			if _, err := w.Rewind(ctx, "c", 4); err != nil {
				return err
			}
			if err := w.Append(ctx, "c", userText("b 4"), userText("b 5"), userText("b 6")); err != nil {
				return err
			}
			return w.SetMark(ctx, "c", history.Mark{From: 6, Facts: kept})
		}, 6, kept, "b 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := markedStore(t, 10, 0)
			ctx := context.Background()
			w := openStore(t, path)
			if err := w.SetMark(ctx, "c", history.Mark{From: 6, Facts: kept}); err != nil {
				t.Fatal(err)
			}
			r := keeper(t, path, 6, kept)
			if err := w.Append(ctx, "c", userText("a 1")); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(ctx, w); err != nil {
				t.Fatal(err)
			}
			m, msgs, err := r.Marked(ctx, "c")
			if err != nil || m.From != tc.from || !bytes.Equal(m.Facts, tc.facts) || texts(msgs) != tc.msgs {
				t.Fatalf("the keeper: mark from %d (%d bytes of facts, as set %v), messages %s, %v; want from %d (%d bytes) and %s",
					m.From, len(m.Facts), bytes.Equal(m.Facts, tc.facts), texts(msgs), err, tc.from, len(tc.facts), tc.msgs)
			}
		})
	}
}

// A mark damaged behind the back of a store that keeps it — its place,
// row, checksum, or facts of another length — is not the one it keeps:
// it is read, and reported as damage, as to a store opened afresh.
func TestADamagedMarkIsReportedToAStoreThatKeptIt(t *testing.T) {
	for _, tc := range []struct{ name, damage string }{
		{"its place changed", `UPDATE marks SET start = 5`},
		{"the row it names changed", `UPDATE marks SET row_crc = row_crc + 1`},
		{"its checksum changed", `UPDATE marks SET crc = crc + 1`},
		{"its facts cut short", `UPDATE marks SET facts = substr(facts, 1, 100)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := markedStore(t, 10, 0)
			ctx := context.Background()
			w := openStore(t, path)
			facts := bigFacts('f', 20000)
			if err := w.SetMark(ctx, "c", history.Mark{From: 6, Facts: facts}); err != nil {
				t.Fatal(err)
			}
			r := keeper(t, path, 6, facts)
			if err := w.Append(ctx, "c", userText("a 1")); err != nil {
				t.Fatal(err)
			}
			if _, err := w.db.Exec(tc.damage); err != nil {
				t.Fatal(err)
			}
			if m, msgs, err := r.Marked(ctx, "c"); !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "mark") {
				t.Fatalf("the keeper's Marked of a damaged mark: from %d, %d messages, %v; want ErrDamaged naming the mark", m.From, len(msgs), err)
			}
		})
	}
}

// The marks table of a new store and of one brought from layout 7 has
// rowids, and facts for its last column (marksV8): the place, checksums
// and length(facts) Marked and every Append read of a mark come from the
// row's first page, not from its facts' overflow pages.
func TestAMarksFactsAreTheLastColumnOfATableWithRowids(t *testing.T) {
	for _, s := range []*Store{openStore(t, markedStore(t, 1, 0)), openStore(t, storeOfLayout(t, "layout7.sql"))} {
		var last, rowids int
		if err := s.db.QueryRow(`SELECT (SELECT MAX(cid) FROM pragma_table_info('marks')) = (SELECT cid FROM pragma_table_info('marks') WHERE name = 'facts'),
			(SELECT sql NOT LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = 'marks')`).Scan(&last, &rowids); err != nil {
			t.Fatal(err)
		}
		if last != 1 || rowids != 1 {
			t.Fatalf("%s: facts the last column %v, a table with rowids %v", s.path, last == 1, rowids == 1)
		}
	}
}

// A store that read a conversation with no mark keeps none (From 0): a
// mark row then written at place 0 behind its back — with checksums 0
// and no facts, as "none" would read — is not taken for the one it
// keeps, but read and reported as damage.
func TestAMarkAtPlace0IsDamageToAStoreThatKeptNone(t *testing.T) {
	path := markedStore(t, 10, 0)
	ctx := context.Background()
	r := keeper(t, path, 0, nil)
	w := openStore(t, path)
	if err := w.Append(ctx, "c", userText("a 1")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(`INSERT INTO marks (conversation, start, row_crc, crc, facts) VALUES ('c', 0, 0, 0, X'')`); err != nil {
		t.Fatal(err)
	}
	if m, msgs, err := r.Marked(ctx, "c"); !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "mark") {
		t.Fatalf("the keeper's Marked of a mark at place 0: from %d, %d messages, %v; want ErrDamaged naming the mark", m.From, len(msgs), err)
	}
}
