package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/storetest"
)

// appendedOddly are messages whose stored form is not the form they were
// given in: an input with spaces (stored compacted), text that is not
// UTF-8 (stored with U+FFFD), an empty part list, an empty input.
func appendedOddly() []history.Message {
	return []history.Message{
		{Role: history.Assistant, Parts: []history.Part{
			{Type: history.ToolCallPart, CallID: "toolu_1", Name: "noop", Input: json.RawMessage(`{ "n" : 1,  "s": "<&>" }`)},
			{Type: history.ToolCallPart, CallID: "toolu_2", Name: "noop", Input: json.RawMessage(`{}`)},
		}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "toolu_1", Text: "bad \xff byte"}, {Type: history.ToolResultPart, CallID: "toolu_2"}}},
		{Role: history.User, Parts: []history.Part{}},
	}
}

// What Messages returns after an Append by the same store is what a store
// opened afresh reads from the file: the stored form, not the form the
// messages were appended in.
func TestMessagesAfterAppendAreWhatAFreshStoreReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	for _, read := range []bool{true, false} {
		if read { // the store has read the conversation, to its end
			if _, err := s.Messages(ctx, "c"); err != nil {
				t.Fatal(err)
			}
		}
		for i, m := range append(storetest.SampleMessages(), appendedOddly()...) {
			actx := ctx
			if i%2 == 0 { // kept as stored, decoded by the next synced append or read
				actx = history.Lazy(ctx)
			}
			if err := s.Append(actx, "c", m); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.Messages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	want, err := openStore(t, path).Messages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if n := 2 * len(append(storetest.SampleMessages(), appendedOddly()...)); len(got) != n {
		t.Fatalf("after appending, this store returns %d messages, want %d", len(got), n)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after appending, this store returns other messages than a fresh one reads (-fresh +this):\n%s", diff)
	}
}

// A store that has read a conversation keeps the messages it appends to
// it as they were stored, and does not read them back: a message damaged
// in the file after this store wrote it is found by the next store to
// open the file, as before, not by this one (which holds what it wrote,
// as it holds every message it read). Before, every Messages after an
// Append read and decoded the round's rows again.
func TestAStoreKeepsWhatItAppendedInsteadOfReadingItBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	want := appendedOddly()
	if err := s.Append(ctx, "c", want...); err != nil {
		t.Fatal(err)
	}
	// damage message 1 behind the store's back
	if _, err := s.db.Exec(`UPDATE messages SET crc = crc + 1 WHERE conversation = 'c' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	got, err := s.Messages(ctx, "c")
	if err != nil {
		t.Fatalf("the store read back what it had appended: %v", err)
	}
	if len(got) != len(want) || string(got[0].Parts[0].Input) != `{"n":1,"s":"<&>"}` {
		t.Fatalf("got %+v", got)
	}
	if _, err := openStore(t, path).Messages(ctx, "c"); err == nil {
		t.Fatal("a fresh store read the damaged message without an error")
	}
}

// A store that has not read a conversation does not start keeping it
// because it appended to it: Messages reads it whole, and finds what is
// wrong with it.
func TestAppendingToAConversationNotReadKeepsNothing(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", appendedOddly()...); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	_, kept := s.read["c"]
	s.mu.Unlock()
	if kept {
		t.Fatal("the store keeps the messages of a conversation it never read")
	}
}

// Under its claim, the writer that appended to a conversation last reads
// nothing back: a row put behind the store's back after its append (as no
// writer can while the claim is held) is not seen by that writer's next
// Messages, which makes no query, while a read without the claim, under
// another claim, or after the store changed the conversation otherwise
// (a rewind) reads the rows added since, as before.
func TestTheWritersOwnAppendIsReadBackWithoutAQueryUnderItsClaim(t *testing.T) {
	s, w := claimedConversation(t)
	ctx := context.Background()
	for i := range 2 {
		if err := s.Append(w, "c", userText(fmt.Sprint("round ", i))); err != nil {
			t.Fatal(err)
		}
	}
	// a third message, put there behind the store's back
	behind := func(seq int) {
		raw := []byte(`{"role":"user","parts":[{"type":"text","text":"behind"}]}`)
		if _, err := s.db.Exec(`INSERT INTO messages (conversation, seq, message, crc) VALUES ('c', ?, ?, ?)`, seq, raw, record.MessageChecksum("c", seq, raw)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.Exec(`UPDATE conversations SET messages = messages + 1 WHERE id = 'c'`); err != nil {
			t.Fatal(err)
		}
	}
	behind(3)
	count := func(ctx context.Context, want int, who string) {
		t.Helper()
		msgs, err := s.Messages(ctx, "c")
		if err != nil || len(msgs) != want {
			t.Fatalf("%s read %d messages (%v), want %d", who, len(msgs), err, want)
		}
	}
	count(w, 2, "the writer after its own append (under its claim)")
	count(history.Writing(ctx, history.NewHolder()), 3, "a reader under another claim")
	count(w, 3, "the writer, once a read found more")
	// another append by the writer, then a rewind by the store: read again
	if err := s.Append(w, "c", userText("round 3")); err != nil {
		t.Fatal(err)
	}
	behind(5)
	count(ctx, 5, "a reader without a claim")
	if err := s.Append(w, "c", userText("round 5")); err != nil {
		t.Fatal(err)
	}
	behind(7)
	if _, err := s.Rewind(w, "c", 4); err != nil {
		t.Fatal(err)
	}
	count(w, 4, "the writer after a rewind of the store's")
}

// What the writer reads under its claim is the conversation as stored
// after each of the ways the kept messages can go or go stale under it:
// forgotten (readKept) between its append and its mark, and a rewind
// that committed but whose sync failed (it returned before forgetting).
// Before, the first read an empty conversation and the second the
// messages from before the rewind, for the rest of the turn.
func TestTheWriterReadsItsConversationAsStoredAfterItsKeptMessagesWentStale(t *testing.T) {
	open := func(t *testing.T) (*Store, context.Context) {
		s, w := claimedConversation(t)
		for i := range 4 {
			if err := s.Append(w, "c", userText(fmt.Sprint("round ", i))); err != nil {
				t.Fatal(err)
			}
		}
		return s, w
	}
	count := func(t *testing.T, s *Store, w context.Context, want int, after string) {
		t.Helper()
		msgs, err := s.Messages(w, "c")
		if err != nil || len(msgs) != want {
			t.Fatalf("after %s the writer read %d messages (%v), want the %d stored", after, len(msgs), err, want)
		}
	}
	t.Run("forgotten between its append and its mark", func(t *testing.T) {
		s, w := open(t)
		h, _ := history.WriterOf(w)
		s.dropRead("c") // as usedLocked does when readKept others are read meanwhile
		s.mu.Lock()
		s.own["c"] = h.Token // a claim on nothing kept: never made now (keepAppended marks what it keeps)
		s.mu.Unlock()
		count(t, s, w, 4, "its kept messages were forgotten")
		if err := s.Append(w, "c", userText("more")); err != nil {
			t.Fatal(err)
		}
		count(t, s, w, 5, "one more append")
	})
	t.Run("a rewind whose sync failed", func(t *testing.T) {
		s, w := open(t)
		s.logs.syncFile = func(*os.File, uintptr) error { return errors.New("the disk went away") }
		if _, err := s.Rewind(w, "c", 1); err == nil {
			t.Fatal("the rewind whose sync failed returned no error")
		}
		count(t, s, w, 1, "a rewind to 1 that committed but did not sync")
	})
}

// After one sync of the log failed, no later synced write says it is on
// disk: the kernel reports a lost write once, so the next sync succeeding
// proves nothing of the pages it dropped, and recovery stops at them.
func TestAfterASyncFailedNoLaterWriteSaysItIsOnDisk(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	fail := true
	s.logs.syncFile = func(*os.File, uintptr) error {
		if fail {
			return errors.New("EIO")
		}
		return nil
	}
	if err := s.Append(ctx, "c", userText("one")); err == nil {
		t.Fatal("the append whose sync failed returned no error")
	}
	fail = false
	err := s.Append(ctx, "c", userText("two"))
	if err == nil || !strings.Contains(err.Error(), "an earlier sync") {
		t.Fatalf("the next synced append, whose own sync succeeds, returned %v; want it to say an earlier sync failed", err)
	}
}

// claimedConversation is a new store with conversation "c", read once
// under a claim, and the context of that claim's writer.
func claimedConversation(t *testing.T) (*Store, context.Context) {
	t.Helper()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	w := history.Writing(ctx, h)
	if _, err := s.Messages(w, "c"); err != nil {
		t.Fatal(err)
	}
	return s, w
}
