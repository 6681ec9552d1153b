package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// A store keeps the newest request body it kept, and keeps the next
// request as what it adds to it while the stored newest row is the one it
// wrote. Another opening that deleted the conversation, made it again and
// kept its request 1 with the same fields — a Time the caller gave, the
// same answer, wire and size — but another body, wrote another row: the
// next request is kept against that row's body, and reads back as kept
// (the review of merge 3c31bae: the fields were all the check compared,
// and request 2 read back as the other opening's body with ours added).
func TestARequestKeptByAnotherOpeningWithTheSameFieldsIsNotTakenForOurs(t *testing.T) {
	path := markedStore(t, 1, 0)
	ctx := context.Background()
	w, r := openStore(t, path), openStore(t, path)
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	if _, err := r.AddRequest(ctx, "c", history.SentRequest{Time: at, Body: []byte(`{"mine":[1`)}); err != nil {
		t.Fatal(err)
	}
	deleteAll(t, w, "c")
	makeConv(t, w, "c", "", 0, "n", 1)
	if _, err := w.AddRequest(ctx, "c", history.SentRequest{Time: at, Body: []byte(`{"hers":[1`)}); err != nil {
		t.Fatal(err)
	}
	want := `{"mine":[1,2]}`
	if _, err := r.AddRequest(ctx, "c", history.SentRequest{Time: at, Body: []byte(want)}); err != nil {
		t.Fatal(err)
	}
	got, err := openStore(t, path).Request(ctx, "c", 2)
	if err != nil || string(got.Body) != want {
		t.Fatalf("request 2 reads back as %q (%v); %q was kept", got.Body, err, want)
	}
	if !got.Time.Equal(at) || got.N != 2 || got.Size != len(want) {
		t.Fatalf("request 2 reads back with time %v, number %d, size %d; kept at %v, number 2, size %d", got.Time, got.N, got.Size, at, len(want))
	}
}

// A store remembers its own newest request body as the one stored (the
// sent cache), and not once another opening has stored a newer one: a
// test that fails when the cache is never filled (every other test
// passes with it off, the body read back instead); the next test, that
// it is used.
func TestAStoreRemembersItsOwnNewestRequestNotOneStoredSince(t *testing.T) {
	path := markedStore(t, 1, 0)
	ctx := context.Background()
	w, r := openStore(t, path), openStore(t, path)
	hit := func(s *Store) bool {
		t.Helper()
		var n int
		var meta string
		if err := s.db.QueryRowContext(ctx, `SELECT n, meta FROM requests WHERE conversation = ? ORDER BY n DESC LIMIT 1`, "c").Scan(&n, &meta); err != nil {
			t.Fatal(err)
		}
		_, ok := s.sent.Last("c", n, meta)
		return ok
	}
	for i := range 2 {
		if _, err := w.AddRequest(ctx, "c", history.SentRequest{Body: []byte(`{"turn":` + string(rune('1'+i)) + `}`)}); err != nil {
			t.Fatal(err)
		}
		if !hit(w) {
			t.Fatalf("after its request %d the store does not take it from memory", i+1)
		}
	}
	if hit(r) {
		t.Fatal("another opening, which kept no request, takes one from memory")
	}
	if _, err := r.AddRequest(ctx, "c", history.SentRequest{Body: []byte(`{"turn":3}`)}); err != nil {
		t.Fatal(err)
	}
	if hit(w) || !hit(r) {
		t.Fatalf("after another opening's request 3: the first store takes its request 2 from memory %v (want false), the other its own %v (want true)", hit(w), hit(r))
	}
}

// The next request is kept as what it adds to the newest body the store
// holds in memory, not to that body read back: with the stored row of
// request 1 changed behind the store's back, request 2 is still kept
// against request 1 as the store sent it (its prefix the common start of
// the two bodies as sent). A store that read the body back would take
// the changed row's and find almost nothing in common.
func TestTheNextRequestIsKeptAgainstTheBodyInMemory(t *testing.T) {
	path := markedStore(t, 1, 0)
	ctx := context.Background()
	w := openStore(t, path)
	first, second := `{"turn":1,"a":"xxxx"}`, `{"turn":1,"a":"xxxx","b":2}`
	if _, err := w.AddRequest(ctx, "c", history.SentRequest{Body: []byte(first)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.ExecContext(ctx, `UPDATE requests SET tail = ? WHERE conversation = 'c' AND n = 1`, []byte(`{"other":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddRequest(ctx, "c", history.SentRequest{Body: []byte(second)}); err != nil {
		t.Fatal(err)
	}
	var base, prefix int
	if err := w.db.QueryRowContext(ctx, `SELECT base, prefix FROM requests WHERE conversation = 'c' AND n = 2`).Scan(&base, &prefix); err != nil {
		t.Fatal(err)
	}
	if want := len(`{"turn":1,"a":"xxxx"`); base != 1 || prefix != want {
		t.Fatalf("request 2 kept on request %d's first %d bytes; want request 1's first %d, the common start of the bodies as sent", base, prefix, want)
	}
}
