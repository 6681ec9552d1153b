package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
)

// A store keeps the newest request body it kept, and keeps the next
// request as what it adds to it while the stored newest row is the one it
// wrote. Another opening that deleted the conversation, made it again and
// kept its request 1 with the same fields — a Time the caller gave, the
// same answer, wire and size — but another body, wrote another row: the
// next request is kept against that row's body, and reads back as kept
// (a review found the cache checked only the request's number, and
// request 2 read back as the other opening's body with ours added).
func TestARequestKeptByAnotherOpeningWithTheSameFieldsIsNotTakenForOurs(t *testing.T) {
	open, _ := opener(t, nil)
	ctx := context.Background()
	w, r := open(), open()
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	if err := r.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddRequest(ctx, "c", history.SentRequest{Time: at, Body: []byte(`{"mine":[1`)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := w.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddRequest(ctx, "c", history.SentRequest{Time: at, Body: []byte(`{"hers":[1`)}); err != nil {
		t.Fatal(err)
	}
	want := `{"mine":[1,2]}`
	if _, err := r.AddRequest(ctx, "c", history.SentRequest{Time: at, Body: []byte(want)}); err != nil {
		t.Fatal(err)
	}
	got, err := open().Request(ctx, "c", 2)
	if err != nil || string(got.Body) != want {
		t.Fatalf("request 2 reads back as %q (%v); %q was kept", got.Body, err, want)
	}
	if !got.Time.Equal(at) || got.N != 2 || got.Size != len(want) {
		t.Fatalf("request 2 reads back with time %v, number %d, size %d; kept at %v, number 2, size %d", got.Time, got.N, got.Size, at, len(want))
	}
}

// A store takes its own newest request's body from memory for the next
// one's delta rather than read it back: after each request it keeps, the
// cache holds for the newest row; another opening of the same database,
// which kept none, has nothing to take (a review found no test would
// notice the cache never being used).
func TestAStoreTakesItsOwnNewestRequestFromMemory(t *testing.T) {
	open, _ := opener(t, nil)
	ctx := context.Background()
	r, other := open(), open()
	if err := r.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{`{"a":[1`, `{"a":[1,2`} {
		if _, err := r.AddRequest(ctx, "c", history.SentRequest{Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
		if hit, err := postgres.SentCacheHit(r, "c"); err != nil || !hit {
			t.Errorf("after request %d: the store's own newest body taken from memory %v (%v); want it taken", i+1, hit, err)
		}
	}
	if hit, err := postgres.SentCacheHit(other, "c"); err != nil || hit {
		t.Errorf("another opening takes the newest body from memory %v (%v); want it read back", hit, err)
	}
}
