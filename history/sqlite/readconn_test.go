package sqlite

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
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

// A reader connection database/sql closes by itself (found bad, as after
// a read whole whose context ended mid-read) frees the statements the
// store prepared on it and leaves the writer's log alone: the synced
// Appends after it go on (their log synced), the next read whole prepares
// its statements on a new reader, no file is left open, and Close, which
// closes the readers then the writer, leaves no log beside the store.
func TestAReaderDiscardedByDatabaseSQLLeavesTheLogAndNoFilesOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	before := openFiles(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	makeConv(t, s, "c", "", 0, "m", 20)
	opened := openFiles(t)
	t.Cleanup(func() { whileReading = nil })
	for i := 0; i < 5; i++ {
		// a read whole whose context ends inside its transaction
		cctx, cancel := context.WithCancel(ctx)
		makeConv(t, s, fmt.Sprint("f", i), "c", 20, "", 20)
		s.dropRead("c")
		whileReading = func(id, point string) {
			if point == "record" {
				cancel()
			}
		}
		_, _ = s.Messages(cctx, fmt.Sprint("f", i))
		whileReading = nil
		cancel()
		// and one found bad outright
		c, err := s.rdb.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.Raw(func(any) error { return sqldriver.ErrBadConn }) // database/sql closes it
		c.Close()
		if err := s.Append(ctx, "c", userText(fmt.Sprint("synced ", i))); err != nil {
			t.Fatalf("a synced Append after a reader was discarded: %v", err)
		}
		s.dropRead("c")
		if m, err := s.Messages(ctx, "c"); err != nil || len(m) != 21+i {
			t.Fatalf("a read whole after a reader was discarded: %d messages, %v", len(m), err)
		}
	}
	if now := openFiles(t); now > opened+2 {
		t.Fatalf("%d files open with the store opened, %d after ten readers were discarded", opened, now)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Close the store's log is still there (%v)", err)
	}
	if after := openFiles(t); after > before {
		t.Fatalf("%d files open before the store was opened, %d after it was closed", before, after)
	}
}

// The readers write nothing: a statement that would write, run on one,
// fails (query_only), and the store is as it was.
func TestTheStoresReadersWriteNothing(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	makeConv(t, s, "c", "", 0, "m", 3)
	if _, err := s.rdb.ExecContext(ctx, `DELETE FROM messages`); err == nil {
		t.Fatal("a DELETE on a reader connection ran")
	}
	s.dropRead("c")
	if m := readAll(t, s, "c"); len(m) != 3 {
		t.Fatalf("after a write refused on a reader, c holds %d messages, want 3", len(m))
	}
}
