package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// bigText is a message's text larger than SQLite writes to its log in
// one write, and than its page cache holds (a commit of it spills).
var bigText = strings.Repeat("a line of a large tool result, to be stored whole\n", 3<<20/50)

// What a commit wrote to the log is in the file when the commit returns: another opening of the store —
// another connection, with descriptors of its own, as another process has
// — reads it at once, a small commit and one larger than a write of the
// log, lazy or synced; and so does the store opened again after Close.
func TestWhatACommitWroteIsReadByAnotherOpeningAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	other := openStore(t, path)
	want := []history.Message{userText("small, lazy"), userText(bigText), userText("small, synced"), userText(bigText + "synced")}
	for i, m := range want {
		wctx := ctx
		if i < 2 {
			wctx = history.Lazy(ctx)
		}
		if err := s.Append(wctx, "c", m); err != nil {
			t.Fatal(err)
		}
		got, err := other.Messages(ctx, "c")
		if err != nil {
			t.Fatalf("another opening reading commit %d: %v", i+1, err)
		}
		if len(got) != i+1 || got[i].Parts[0].Text != m.Parts[0].Text {
			t.Fatalf("after commit %d another opening reads %d messages (the last %d bytes); want %d, the last %d bytes", i+1, len(got), len(got[len(got)-1].Parts[0].Text), i+1, len(m.Parts[0].Text))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := openStore(t, path).Messages(ctx, "c")
	if err != nil || len(got) != len(want) {
		t.Fatalf("opened again: %d messages, %v; want %d", len(got), err, len(want))
	}
	for i := range want {
		if got[i].Parts[0].Text != want[i].Parts[0].Text {
			t.Fatalf("opened again: message %d is %d bytes, want %d", i+1, len(got[i].Parts[0].Text), len(want[i].Parts[0].Text))
		}
	}
}

// Close leaves nothing open of the store: the round's statements, prepared
// on the connection (rawtx.go), are freed before it closes, so SQLite
// closes it for good — checkpointing the log into the store's file and
// removing it, as the last connection to a store does — rather than
// keeping it open for statements never freed.
func TestCloseLeavesNoLogBesideTheStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Keep(history.Lazy(ctx), "c", history.Part{Type: history.ToolResultPart, CallID: "a", Text: "kept"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", userText("appended")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Close the store's log is still there (%v): its connection was not closed", err)
	}
}

// Two openings of one store in one process, appending to a conversation
// each at the same time, lose nothing and mix nothing: each conversation reads back, from a
// third opening, as its writer appended it.
func TestTwoOpeningsAppendingAtOnceKeepEveryMessage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	ctx := context.Background()
	const each = 60
	text := func(who, i int) string {
		if i%10 == 9 {
			return fmt.Sprint(who, " ", i, " ", bigText[:200<<10])
		}
		return fmt.Sprint(who, " ", i)
	}
	stores := []*Store{openStore(t, path), openStore(t, path)}
	for who, s := range stores {
		if err := s.Create(ctx, history.Conversation{ID: fmt.Sprint("c", who)}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, len(stores))
	for who, s := range stores {
		go func() {
			for i := range each {
				wctx := ctx
				if i%2 == 0 {
					wctx = history.Lazy(ctx)
				}
				if err := s.Append(wctx, fmt.Sprint("c", who), userText(text(who, i))); err != nil {
					errs <- fmt.Errorf("opening %d, append %d: %w", who, i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range stores {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	reader := openStore(t, path)
	for who := range stores {
		got, err := reader.Messages(ctx, fmt.Sprint("c", who))
		if err != nil || len(got) != each {
			t.Fatalf("conversation c%d: %d messages, %v; want %d", who, len(got), err, each)
		}
		for i, m := range got {
			if m.Parts[0].Text != text(who, i) {
				t.Fatalf("conversation c%d, message %d is not what was appended (%.40q…)", who, i+1, m.Parts[0].Text)
			}
		}
	}
}

// The log starts over after each checkpoint (SQLite writes a new header
// at its start, then frames over the old ones): across several of them,
// every commit is read at once by
// another opening, and the whole conversation reads back as appended.
func TestCommitsAcrossCheckpointsReadBackFromAnotherOpening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, other := openStore(t, path), openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	// ~3 pages a commit: 3,000 pages of log, past three checkpoints of
	// 1,000 pages (wal_autocheckpoint)
	const n = 1000
	text := func(i int) string { return fmt.Sprint(i, " ", bigText[:6000]) }
	for i := range n {
		wctx := history.Lazy(ctx)
		if i%3 == 2 {
			wctx = ctx
		}
		if err := s.Append(wctx, "c", userText(text(i))); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			got, err := other.Messages(ctx, "c")
			if err != nil || len(got) != i+1 {
				t.Fatalf("after %d appends another opening reads %d messages, %v", i+1, len(got), err)
			}
		}
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() > 1500*walFrame {
		t.Fatalf("the log never started over (%v): the test did not cross a checkpoint", err)
	}
	got, err := openStore(t, path).Messages(ctx, "c")
	if err != nil || len(got) != n {
		t.Fatalf("a new opening reads %d messages, %v; want %d", len(got), err, n)
	}
	for i, m := range got {
		if m.Parts[0].Text != text(i) {
			t.Fatalf("message %d is not what was appended (%.20q…)", i+1, m.Parts[0].Text)
		}
	}
}
