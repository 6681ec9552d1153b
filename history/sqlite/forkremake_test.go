package sqlite

// Tests of a conversation deleted by one opening of a store and made
// again under its id, read by another opening that kept what it read of
// the first making (found by the review of issue 34's seventh session:
// readTag named no making of a conversation, so a fork with no rows of
// its own made again at the same place over a base of the same id had
// the tag of the first).

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// forkKept is a store of c's 10 messages ("m 0" …) with f forked from it
// at 8 (no rows of its own), marked from 4 with facts unless they are
// nil: w is the opening that made it, r another opening of the same file
// (at path) that read f once (Marked when marked, else Messages), and so
// keeps f's messages and its readTag.
func forkKept(t *testing.T, facts []byte) (path string, w, r *Store) {
	t.Helper()
	path = markedStore(t, 10, 0)
	ctx := context.Background()
	w = openStore(t, path)
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8}); err != nil {
		t.Fatal(err)
	}
	if facts != nil {
		if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: facts}); err != nil {
			t.Fatal(err)
		}
	}
	r = openStore(t, path)
	var err error
	if facts != nil {
		var m history.Mark
		if m, _, err = r.Marked(ctx, "f"); err == nil && !bytes.Equal(m.Facts, facts) {
			t.Fatalf("r's first read of f's mark: facts %q…", m.Facts[:min(3, len(m.Facts))])
		}
	} else {
		_, err = r.Messages(ctx, "f")
	}
	if err != nil {
		t.Fatal(err)
	}
	return path, w, r
}

// makeConv makes conversation id in w, with the messages prefix 0 … prefix
// n-1 (a fork of base at baseAt, when base is not "", holding them past
// baseAt).
func makeConv(t *testing.T, w *Store, id, base string, baseAt int, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	var err error
	if base == "" {
		err = w.Create(ctx, history.Conversation{ID: id})
	} else {
		_, err = w.Fork(ctx, history.Conversation{ID: id, Base: base, BaseAt: baseAt})
	}
	if err != nil {
		t.Fatal(err)
	}
	if n > baseAt {
		if err := w.Append(ctx, id, storetest.Numbered(prefix, n)[baseAt:]...); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteAll deletes conversations ids in w, in order.
func deleteAll(t *testing.T, w *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := w.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
}

// remakeBase deletes fork f and its base c, makes c again under its id
// with 10 other messages ("n 0" …) and forks f from it at 8 again: f's
// link (c, 8, no row of its own) is what it was.
func remakeBase(t *testing.T, w *Store) {
	t.Helper()
	deleteAll(t, w, "f", "c")
	makeConv(t, w, "c", "", 0, "n", 10)
	makeConv(t, w, "f", "c", 8, "", 8)
}

// readsAsStored fails t unless r's Messages of conversation id are those
// of a store of path opened afresh.
func readsAsStored(t *testing.T, r *Store, path, id string) {
	t.Helper()
	ctx := context.Background()
	got, err := r.Messages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want, err := openStore(t, path).Messages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if texts(got) != texts(want) {
		t.Fatalf("r read %s, the store holds %s", texts(got), texts(want))
	}
}

// markedAsStored fails t unless r's Marked of conversation id (under
// ctx) is that of a store of path opened afresh.
func markedAsStored(t *testing.T, ctx context.Context, r *Store, path, id string) {
	t.Helper()
	m, got, err := r.Marked(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wm, want, err := openStore(t, path).Marked(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if m.From != wm.From || !bytes.Equal(m.Facts, wm.Facts) || texts(got) != texts(want) {
		t.Fatalf("r read a mark at %d (facts %q…) over %s; the store holds one at %d (facts %q…) over %s",
			m.From, m.Facts[:min(3, len(m.Facts))], texts(got), wm.From, wm.Facts[:min(3, len(wm.Facts))], texts(want))
	}
}

// Messages of a fork with no rows of its own, read by r, after
// another opening deleted it and its base and made both again.
func TestAForkRemadeOverARemadeBaseIsReadAsItIsNow(t *testing.T) {
	path, w, r := forkKept(t, nil)
	remakeBase(t, w)
	readsAsStored(t, r, path, "f")
}

// Marked of such a fork, marked among its base's messages: the
// new mark's facts (read: args' NULLs) but which messages?
func TestAForkRemadeOverARemadeBaseIsReadFromItsMarkAsItIsNow(t *testing.T) {
	path, w, r := forkKept(t, []byte("of c"))
	remakeBase(t, w)
	if err := w.SetMark(context.Background(), "f", history.Mark{From: 4, Facts: []byte("of n")}); err != nil {
		t.Fatal(err)
	}
	markedAsStored(t, context.Background(), r, path, "f")
}

// The kept mark (noRow) of a fork surviving another opening's delete and
// re-fork, then an Append by this store under its claim, handed out by
// ownMarked: the new mark's checksum collides with the kept one's.
func TestAForkRemadeWithACollidingMarkIsReadAsItIsNowAfterItsOwnAppend(t *testing.T) {
	kept := bigFacts('f', 20000)
	path, w, r := forkKept(t, kept)
	remakeBase(t, w)
	ctx := context.Background()
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
	markedAsStored(t, hctx, r, path, "f")
}

// As TestAForkRemadeOverARemadeBaseIsReadAsItIsNow, the base not
// deleted but rewound (after the fork's delete) and appended to again.
func TestAForkRemadeOverARewoundBaseIsReadAsItIsNow(t *testing.T) {
	path, w, r := forkKept(t, nil)
	deleteAll(t, w, "f")
	if _, err := w.Rewind(context.Background(), "c", 2); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(context.Background(), "c", storetest.Numbered("n", 10)[2:]...); err != nil {
		t.Fatal(err)
	}
	makeConv(t, w, "f", "c", 8, "", 8)
	readsAsStored(t, r, path, "f")
}

// A fork of a fork: g shares all ten messages of e, whose last two are
// its own (a fork of c at 8); another opening deletes all three and makes
// them again, the same way, of other messages. g names e at 10 as before,
// and has no row of its own: its tag is e's row's.
func TestAForkOfAForkRemadeOverItsRemadeBasesIsReadAsItIsNow(t *testing.T) {
	path := markedStore(t, 10, 0)
	w := openStore(t, path)
	makeConv(t, w, "e", "c", 8, "e", 10)
	makeConv(t, w, "g", "e", 10, "", 10)
	r := openStore(t, path)
	if _, err := r.Messages(context.Background(), "g"); err != nil {
		t.Fatal(err)
	}
	deleteAll(t, w, "g", "e", "c")
	makeConv(t, w, "c", "", 0, "n", 10)
	makeConv(t, w, "e", "c", 8, "o", 10)
	makeConv(t, w, "g", "e", 10, "", 10)
	readsAsStored(t, r, path, "g")
}

// A fork rewound below the place it shares its base from names its
// base's base's messages through its base: f, a fork of b at 8 (b a fork
// of c at 5, with three messages of its own), rewound to 3, shares b's
// first three, which are c's. Another opening deletes the three (and f's
// branch) and makes them again the same way, of other messages: f's link
// is (b, 3) again, and the row holding its third message is c's, two
// bases down.
func TestAForkRewoundBelowItsBaseAndRemadeOverRemadeBasesIsReadAsItIsNow(t *testing.T) {
	path := markedStore(t, 5, 0)
	w := openStore(t, path)
	ctx := context.Background()
	remake := func(prefix string) {
		makeConv(t, w, "b", "c", 5, prefix, 8)
		makeConv(t, w, "f", "b", 8, "", 8)
		if _, err := w.Rewind(ctx, "f", 3); err != nil {
			t.Fatal(err)
		}
	}
	remake("b")
	r := openStore(t, path)
	if _, err := r.Messages(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	deleteAll(t, w, "f", "b", "c")
	makeConv(t, w, "c", "", 0, "n", 5)
	remake("o")
	if c, err := w.Get(ctx, "f"); err != nil || c.Base != "b" || c.BaseAt != 3 {
		t.Fatalf("f: %+v, %v; want it to share b's first 3", c, err)
	}
	readsAsStored(t, r, path, "f")
}

// The newest request body a store keeps of a conversation (sentCache) is
// not taken for the one stored under the same number by another opening
// that deleted the conversation and made it again: the next request is
// kept by what it shares with the stored one, and given back whole.
func TestARequestAfterAnotherOpeningRemadeTheConversationIsKeptWhole(t *testing.T) {
	path := markedStore(t, 1, 0)
	ctx := context.Background()
	w, r := openStore(t, path), openStore(t, path)
	mine := []string{`{"mine":[1`, `{"mine":[1,2`, `{"mine":[1,2,3]}`}
	for _, b := range mine[:2] {
		if _, err := r.AddRequest(ctx, "c", history.SentRequest{Body: []byte(b)}); err != nil {
			t.Fatal(err)
		}
	}
	deleteAll(t, w, "c")
	makeConv(t, w, "c", "", 0, "n", 1)
	for _, b := range []string{`{"theirs":[1`, `{"theirs":[1,2,3,4,5,6,7]}`} {
		if _, err := w.AddRequest(ctx, "c", history.SentRequest{Body: []byte(b)}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := r.AddRequest(ctx, "c", history.SentRequest{Body: []byte(mine[2])})
	if err != nil || n != 3 {
		t.Fatalf("request %d, %v; want 3", n, err)
	}
	got, err := openStore(t, path).Request(ctx, "c", 3)
	if err != nil || string(got.Body) != mine[2] {
		t.Fatalf("request 3 reads back as %q (%v); %q was kept", got.Body, err, mine[2])
	}
}

// What a store keeps of a fork with no rows of its own is still taken as
// kept where nothing was remade: the tag its read whole keeps, its
// Append's transaction, its read from a mark among its base's messages and
// SetMark's transaction name the same row (its base's at 8), so the
// fork's first Append adds to what was read (keepAppended), and SetMark
// keeps the mark with what Marked read (markSet).
func TestAForkWithNoRowsOfItsOwnStaysKeptAcrossItsFirstAppendOrMark(t *testing.T) {
	_, w, r := forkKept(t, nil)
	ctx := context.Background()
	kept := func(what string, n int) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		if got, ok := r.read["f"]; !ok || len(got)+len(r.undecoded["f"])+r.start["f"] != n {
			t.Fatalf("%s: r keeps %d of f's messages (%v); want %d", what, len(got), ok, n)
		}
	}
	kept("read whole", 8)
	if err := r.Append(ctx, "f", userText("own")); err != nil {
		t.Fatal(err)
	}
	kept("its first append", 9)
	makeConv(t, w, "g", "c", 8, "", 8)
	if _, _, err := r.Marked(ctx, "g"); err != nil { // through c: no mark
		t.Fatal(err)
	}
	if err := r.SetMark(ctx, "g", history.Mark{From: 4, Facts: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	m, ok := r.marks["g"]
	r.mu.Unlock()
	if !ok || string(m.Facts) != "x" {
		t.Fatalf("r keeps g's mark %v (%v); want the one it set", m, ok)
	}
}

// A Marked read that finds what the store kept of a conversation moved
// (rewound by another opening, or deleted and made again) keeps what it
// read in its place, as Messages does: else the longer, stale messages
// stayed kept, and every Marked after read the conversation again from
// its mark (or whole) without keeping it.
func TestAMarkedReadOfAConversationMovedElsewhereKeepsWhatItRead(t *testing.T) {
	path := markedStore(t, 10, 0)
	ctx := context.Background()
	w, r := openStore(t, path), openStore(t, path)
	if _, err := r.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Rewind(ctx, "c", 5); err != nil {
		t.Fatal(err)
	}
	_, msgs, err := r.Marked(ctx, "c")
	if err != nil || len(msgs) != 5 {
		t.Fatalf("Marked: %d messages, %v; want 5", len(msgs), err)
	}
	r.mu.Lock()
	n, kept := len(r.read["c"])+len(r.undecoded["c"]), r.read["c"] != nil
	r.mu.Unlock()
	if !kept || n != 5 {
		t.Fatalf("r keeps %d of c's messages (%v) after its Marked read; want the 5 it read", n, kept)
	}
}
