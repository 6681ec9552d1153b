package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// A read whole runs in a read transaction on a reader connection, not on
// the store's writer: while one is held open (here at its "record" point,
// whileReading), another conversation's Append, Record, Get and Messages
// on the same store complete, and the read, let go, returns the fork as
// it was when it began. Before readconn every read transaction ran on the
// store's one connection, and they waited for it to end (a review
// measured a Record behind a fork of a 50,000-message base's first read
// at a p50 of 65–186 ms): here each would wait until its context's
// deadline and fail.
func TestAnotherConversationIsWrittenAndReadWhileAReadWholeIsHeld(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	makeConv(t, s, "c", "", 0, "m", 8)
	makeConv(t, s, "f", "c", 8, "", 8)
	if err := s.Create(ctx, history.Conversation{ID: "other"}); err != nil {
		t.Fatal(err)
	}
	want := texts(readAll(t, s, "f"))
	s.dropRead("c")
	s.dropRead("f")

	held, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { whileReading = nil })
	whileReading = func(id, point string) {
		if id == "f" && point == "record" {
			whileReading = nil
			close(held)
			<-release
		}
	}
	type read struct {
		msgs []history.Message
		err  error
	}
	done := make(chan read, 1)
	go func() {
		m, err := s.Messages(ctx, "f")
		done <- read{m, err}
	}()
	<-held
	// each bounded, so that before readconn the test fails rather than hangs
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Append(wait, "other", storetest.Numbered("o", 3)...); err != nil {
		close(release)
		t.Fatalf("Append to another conversation while a read whole was held: %v", err)
	}
	if c, err := s.Record(wait, "other"); err != nil || c.Messages != 3 {
		close(release)
		t.Fatalf("Record of another conversation while a read whole was held: %d messages, %v", c.Messages, err)
	}
	if c, err := s.Get(wait, "other"); err != nil || c.Messages != 3 {
		close(release)
		t.Fatalf("Get of another conversation while a read whole was held: %d messages, %v", c.Messages, err)
	}
	if m, err := s.Messages(wait, "other"); err != nil || len(m) != 3 {
		close(release)
		t.Fatalf("Messages of another conversation while a read whole was held: %d messages, %v", len(m), err)
	}
	// and the held read's own conversation: written meanwhile too
	if err := s.Append(wait, "f", userText("after")); err != nil {
		close(release)
		t.Fatalf("Append to the conversation read while its read whole was held: %v", err)
	}
	close(release)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := texts(r.msgs); got != want {
		t.Fatalf("the held read of f gave %s; f held %s when it began", got, want)
	}
	// what it kept is not taken for f now: the append is read after it
	if got, now := texts(readAll(t, s, "f")), want+", after"; got != now {
		t.Fatalf("f read after the held read gave %s; it holds %s", got, now)
	}
	if got := texts(readAll(t, openStore(t, s.path), "f")); got != want+", after" {
		t.Fatalf("f read by a store opened afresh: %s", got)
	}
}
