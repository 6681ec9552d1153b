package postgres_test

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
