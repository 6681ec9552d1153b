package sqlite

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// remakeBase deletes fork f and its base c, makes c again under its id
// with 10 other messages ("n 0" …) and forks f from it at 8 again: f's
// readTag (8, c, 8, noRow) is what it was.
func remakeBase(t *testing.T, w *Store) {
	t.Helper()
	ctx := context.Background()
	if err := w.Delete(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := w.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	var nm []history.Message
	for i := 0; i < 10; i++ {
		nm = append(nm, userText("n "+strconv.Itoa(i)))
	}
	if err := w.Append(ctx, "c", nm...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
}

// Messages of a fork with no rows of its own, read by r, after
// another opening deleted it and its base and made both again.
func TestAForkRemadeOverARemadeBaseIsReadAsItIsNow(t *testing.T) {
	knownForkRemakeDefect(t)
	path := markedStore(t, 10, 0)
	ctx := context.Background()
	w := openStore(t, path)
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, path)
	if _, err := r.Messages(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	remakeBase(t, w)
	got, err := r.Messages(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := openStore(t, path).Messages(ctx, "f")
	if texts(got) != texts(want) {
		t.Fatalf("r read %s, the store holds %s", texts(got), texts(want))
	}
}

// Marked of such a fork, marked among its base's messages: the
// new mark's facts (read: args' NULLs) but which messages?
func TestAForkRemadeOverARemadeBaseIsReadFromItsMarkAsItIsNow(t *testing.T) {
	knownForkRemakeDefect(t)
	path := markedStore(t, 10, 0)
	ctx := context.Background()
	w := openStore(t, path)
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: []byte("of c")}); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, path)
	if _, _, err := r.Marked(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	remakeBase(t, w)
	if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: []byte("of n")}); err != nil {
		t.Fatal(err)
	}
	m, got, err := r.Marked(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := openStore(t, path).Marked(ctx, "f")
	if string(m.Facts) != "of n" || texts(got) != texts(want) {
		t.Fatalf("r read facts %q over %s, the store holds %s", m.Facts, texts(got), texts(want))
	}
}

// the brief's question — the kept mark (noRow) of a fork
// surviving another opening's delete and re-fork, then an Append by this
// store under its claim, handed out by ownMarked. The new mark collides.
func TestAForkRemadeWithACollidingMarkIsReadAsItIsNowAfterItsOwnAppend(t *testing.T) {
	knownForkRemakeDefect(t)
	path := markedStore(t, 10, 0)
	ctx := context.Background()
	w := openStore(t, path)
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	kept := bigFacts('f', 20000)
	if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: kept}); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, path)
	if _, _, err := r.Marked(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	remakeBase(t, w)
	other := colliding(t, "f", 4, noRow, kept, bigFacts('g', len(kept)))
	if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: other}); err != nil {
		t.Fatal(err)
	}
	h := history.NewHolder()
	if _, err := r.Claim(ctx, "f", h, time.Minute); err != nil {
		t.Fatal(err)
	}
	hctx := history.Writing(ctx, h)
	if err := r.Append(hctx, "f", userText("own")); err != nil {
		t.Fatal(err)
	}
	m, got, err := r.Marked(hctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	wm, want, _ := openStore(t, path).Marked(ctx, "f")
	if !bytes.Equal(m.Facts, wm.Facts) || texts(got) != texts(want) {
		t.Fatalf("r handed out facts %q… over %s; the store holds %q… over %s", m.Facts[:3], texts(got), wm.Facts[:3], texts(want))
	}
}

// as TestAForkRemadeOverARemadeBaseIsReadAsItIsNow, the base not
// deleted but rewound (after the fork's delete) and appended to again.
func TestAForkRemadeOverARewoundBaseIsReadAsItIsNow(t *testing.T) {
	knownForkRemakeDefect(t)
	path := markedStore(t, 10, 0)
	ctx := context.Background()
	w := openStore(t, path)
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, path)
	if _, err := r.Messages(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Rewind(ctx, "c", 2); err != nil {
		t.Fatal(err)
	}
	var nm []history.Message
	for i := 2; i < 10; i++ {
		nm = append(nm, userText("n "+strconv.Itoa(i)))
	}
	if err := w.Append(ctx, "c", nm...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Messages(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := openStore(t, path).Messages(ctx, "f")
	if texts(got) != texts(want) {
		t.Fatalf("r read %s, the store holds %s", texts(got), texts(want))
	}
}

// knownForkRemakeDefect skips a test of a defect found by the review of
// issue 34's seventh session and not fixed yet, unless
// MYELIN_KNOWN_DEFECTS is set: a fork with no rows of its own, kept by a
// store (its readTag: place, base, base_at, noRow), deleted by another
// opening and made again under its id over a base of the same id at the
// same place (the base remade, or rewound and appended to) has the same
// readTag, so the store takes the messages (and, under its claim, the
// mark) it kept of the first for the second's. The tag needs something
// that tells one making of a conversation from another (its record's
// checksum, which covers its creation time). Reaching it takes a client
// that reuses a conversation's id.
func knownForkRemakeDefect(t *testing.T) {
	t.Helper()
	if os.Getenv("MYELIN_KNOWN_DEFECTS") == "" {
		t.Skip("a known defect, not fixed yet (knownForkRemakeDefect): set MYELIN_KNOWN_DEFECTS=1 to run")
	}
}
