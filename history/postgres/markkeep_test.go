package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/storetest"
)

// A store that read a conversation's mark does not have its facts sent
// again at its next Marked after another store appended to the
// conversation (a worker given a conversation back), while the mark's
// stamp is the one it read: its facts (20 KB, stored out of line) changed
// behind the stores' backs under the same stamp stand for the read — the
// keeper hands out the facts it read and checked, with the row appended,
// and a store opened afresh reports the damage. A mark another store set
// since (new facts at the same place, a new place), dropped, or a rewind
// before it, is read anew.
func TestAMarkKeptIsNotSentAgainWhileItsStampStays(t *testing.T) {
	ctx := context.Background()
	kept := bytes.Repeat([]byte("f"), 20000)
	for _, tc := range []struct {
		name  string
		write func(w *postgres.Store, schema string) error
		mark  history.Mark
		from  int // the first message read
	}{
		{"its facts changed under the same stamp", func(w *postgres.Store, schema string) error {
			exec(t, schema, `UPDATE conversation_marks SET facts = $1`, bytes.Repeat([]byte("g"), len(kept)))
			return nil
		}, history.Mark{From: 6, Facts: kept}, 6},
		{"new facts at the same place", func(w *postgres.Store, _ string) error {
			return w.SetMark(ctx, "c", history.Mark{From: 6, Facts: []byte("new")})
		}, history.Mark{From: 6, Facts: []byte("new")}, 6},
		{"a new place", func(w *postgres.Store, _ string) error {
			return w.SetMark(ctx, "c", history.Mark{From: 8, Facts: kept})
		}, history.Mark{From: 8, Facts: kept}, 8},
		{"the mark dropped", func(w *postgres.Store, _ string) error {
			return w.SetMark(ctx, "c", history.Mark{})
		}, history.Mark{}, 0},
		{"a rewind before it", func(w *postgres.Store, _ string) error {
			_, err := w.Rewind(ctx, "c", 4)
			return err
		}, history.Mark{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open, name := opener(t, nil)
			w := open()
			if err := w.Create(ctx, history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			if err := w.Append(ctx, "c", storetest.Numbered("m", 10)...); err != nil {
				t.Fatal(err)
			}
			if err := w.SetMark(ctx, "c", history.Mark{From: 6, Facts: kept}); err != nil {
				t.Fatal(err)
			}
			r := open()
			if m, _, err := r.Marked(ctx, "c"); err != nil || m.From != 6 || !bytes.Equal(m.Facts, kept) {
				t.Fatalf("the keeper's first read: from %d, %d bytes, %v", m.From, len(m.Facts), err)
			}
			if err := w.Append(ctx, "c", storetest.UserText("a 1")); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(w, name); err != nil {
				t.Fatal(err)
			}
			want := storetest.Texts(readAll(t, open(), "c"))[tc.from:]
			m, msgs, err := r.Marked(ctx, "c")
			if err != nil || m.From != tc.mark.From || !bytes.Equal(m.Facts, tc.mark.Facts) || !slices.Equal(storetest.Texts(msgs), want) {
				t.Fatalf("the keeper: mark from %d (%d bytes of facts, as wanted %v), messages %q, %v; want from %d (%d bytes) and %q",
					m.From, len(m.Facts), bytes.Equal(m.Facts, tc.mark.Facts), storetest.Texts(msgs), err, tc.mark.From, len(tc.mark.Facts), want)
			}
			if tc.name == "its facts changed under the same stamp" {
				if _, _, err := open().Marked(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
					t.Fatalf("a store opened afresh: %v; want ErrDamaged (else this test proves nothing)", err)
				}
			}
		})
	}
}
