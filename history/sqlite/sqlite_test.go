package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

func openStore(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMessagesComeBackAsStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c1", System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	want := storetest.SampleMessages()
	if err := s.Append(ctx, "c1", want...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// a fresh instance, as after a restart
	s2 := openStore(t, path)
	got, err := s2.Messages(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i].Time.IsZero() {
			t.Fatalf("message %d has no time", i)
		}
		got[i].Time = want[i].Time
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("read back by a fresh instance (-stored +read):\n%s", diff)
	}
	c, err := s2.Get(ctx, "c1")
	if err != nil || c.System != "be brief" || c.Messages != 3 {
		t.Fatalf("conversation %+v, %v", c, err)
	}
}

func TestStoredTextIsNotEscaped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	_ = s.Create(ctx, history.Conversation{ID: "c"})
	_ = s.Append(ctx, "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "<b>&</b>"}}})
	var raw string
	if err := s.db.QueryRow(`SELECT message FROM messages`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw, "<b>&</b>") {
		t.Fatalf("stored %s", raw)
	}
}

// Every Append changes a conversation's updated time; an index on it cost
// each append a page of its own in the log. A store made before issue 13
// (layout 3 with the index, or layout 1 or 2) loses it when opened, a new
// store never has it, and List still puts the most recent first.
func TestNoStoreKeepsAnIndexOnUpdatedAndListStillOrders(t *testing.T) {
	ctx := context.Background()
	indexes := func(s *Store) int {
		var n int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'conversations_updated'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		name string
		made func(t *testing.T, path string) // what is at path before it is opened
	}{
		{"new store", func(*testing.T, string) {}},
		{"layout 3 with the index", func(t *testing.T, path string) {
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.Exec(`CREATE INDEX conversations_updated ON conversations(updated)`); err != nil {
				t.Fatal(err)
			}
			s.Close()
		}},
		{"layout 2", func(t *testing.T, path string) {
			script, err := os.ReadFile(filepath.Join("testdata", "layout2.sql"))
			if err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(string(script)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.db")
			tc.made(t, path)
			s := openStore(t, path)
			if n := indexes(s); n != 0 {
				t.Fatalf("%d index(es) on conversations(updated) after opening", n)
			}
			for _, id := range []string{"a", "b", "c"} {
				if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Append(ctx, "b", userText("x")); err != nil {
				t.Fatal(err)
			}
			list, err := s.List(ctx)
			if err != nil || len(list) < 3 || list[0].ID != "b" || list[0].Messages != 1 {
				t.Fatalf("list %+v, %v", list, err)
			}
		})
	}
}

func TestListIsMostRecentFirst(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Append(ctx, "a", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "x"}}})
	list, err := s.List(ctx)
	if err != nil || len(list) != 3 || list[0].ID != "a" || list[0].Messages != 1 {
		t.Fatalf("list %+v, %v", list, err)
	}
}

func TestUnknownConversationIsNotFound(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Get: %v", err)
	}
	if _, err := s.Messages(ctx, "nope"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Messages: %v", err)
	}
	if err := s.Append(ctx, "nope", history.Message{Role: history.User}); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Append: %v", err)
	}
	if err := s.Create(ctx, history.Conversation{ID: "dup"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, history.Conversation{ID: "dup"}); err == nil {
		t.Fatal("a second conversation with the same id was created")
	}
}

func TestCorruptStoreIsAClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is not a database\n", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), "is not a SQLite database") {
		t.Fatalf("err = %v", err)
	}
}

func TestLockedStoreIsAClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	_ = s.Create(ctx, history.Conversation{ID: "c"})
	if _, err := s.db.Exec(`PRAGMA busy_timeout = 100`); err != nil {
		t.Fatal(err)
	}
	// another holder of the file takes the write lock and keeps it
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `ROLLBACK`)
	err = s.Append(ctx, "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "x"}}})
	if err == nil || !strings.Contains(err.Error(), "is locked by another process") {
		t.Fatalf("err = %v", err)
	}
}

func TestMessagesSeesWhatAnotherStoreAppended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	a, b := openStore(t, path), openStore(t, path)
	ctx := context.Background()
	_ = a.Create(ctx, history.Conversation{ID: "c"})
	_ = a.Append(ctx, "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "one"}}})
	if msgs, _ := b.Messages(ctx, "c"); len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	_ = a.Append(ctx, "c", history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "two"}}})
	msgs, err := b.Messages(ctx, "c")
	if err != nil || len(msgs) != 2 || msgs[1].Parts[0].Text != "two" {
		t.Fatalf("messages %+v, %v", msgs, err)
	}
	// a caller appending to what it got does not change the next answer
	_ = append(msgs, history.Message{Role: history.User})
	if again, _ := b.Messages(ctx, "c"); len(again) != 2 {
		t.Fatalf("%d messages", len(again))
	}
}

// Every write commits at synchronous=NORMAL (in the log, no sync of its
// own), and every write that is not lazy — Append, Create, PutBlob… — then
// syncs the log once, after its commit, which puts the lazy writes before
// it on disk too: a round of a lazy answer, a keep and a synced append is
// one sync. A lazy write never syncs, nor does a relaxed store.
func TestEverySyncedWriteSyncsTheLogOnceAfterItsCommitAndALazyOneNever(t *testing.T) {
	const normal = 1
	ctx := context.Background()
	text := func(s string) history.Message {
		return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
	}
	for _, tc := range []struct {
		name    string
		relaxed bool
		steps   []string // what each write is, in order
		want    []int    // the syncs of the log each made
	}{
		{"synced store", false,
			[]string{"lazy", "lazy", "synced", "synced", "lazy", "synced", "create", "lazy-append", "keep", "append", "claim", "put-blob"},
			[]int{0, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1}},
		{"relaxed store", true,
			[]string{"lazy", "synced", "create", "lazy-append", "append", "put-blob"},
			[]int{0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenWith(filepath.Join(t.TempDir(), "h.db"), Options{Relaxed: tc.relaxed})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			syncs := 0
			var synced []byte // the log as the last sync found it
			s.logs.syncFile = func(f *os.File, _ uintptr) error {
				syncs++
				synced, err = os.ReadFile(f.Name())
				return err
			}
			created := "" // the conversation the last create made
			for i, step := range tc.steps {
				before, level := syncs, 0
				switch step {
				case "lazy", "synced": // the level inside the write's own transaction
					err = s.write(ctx, step, step == "lazy", func(tx *sql.Tx) error {
						return tx.QueryRow(`PRAGMA synchronous`).Scan(&level)
					})
				case "create":
					created = fmt.Sprint("c", i)
					err = s.Create(ctx, history.Conversation{ID: created})
				case "lazy-append":
					err = s.Append(history.Lazy(ctx), "c", text("lazy"))
				case "keep":
					err = s.Keep(history.Lazy(ctx), "c", history.Part{Type: history.ToolResultPart, CallID: "1", Text: "kept"})
				case "append":
					err = s.Append(ctx, "c", text("synced"))
				case "claim":
					_, err = s.Claim(ctx, "c", history.NewHolder(), time.Minute)
				case "put-blob":
					_, err = s.PutBlob(ctx, created, "f", []byte("a file's version"))
				}
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, step, err)
				}
				if got := syncs - before; got != tc.want[i] {
					t.Fatalf("step %d (%s) synced the log %d times, want %d", i, step, got, tc.want[i])
				}
				if level != 0 && level != normal {
					t.Fatalf("step %d (%s) committed at synchronous=%d, want NORMAL (%d): the store syncs the log itself", i, step, level, normal)
				}
			}
			if !tc.relaxed {
				// the last sync came after every commit: what it synced
				// is the whole log
				now, err := os.ReadFile(s.path + "-wal")
				if err != nil || !bytes.Equal(now, synced) {
					t.Fatalf("the log changed after its last sync (%d bytes synced, %d now, %v)", len(synced), len(now), err)
				}
			}
			if msgs, err := s.Messages(ctx, "c"); err != nil || len(msgs) != 2 || msgs[0].Parts[0].Text != "lazy" {
				t.Fatalf("messages %+v, %v", msgs, err)
			}
			if !history.IsLazy(history.Lazy(ctx)) || history.IsLazy(ctx) {
				t.Fatal("IsLazy")
			}
		})
	}
}

func TestAStoreOfAnotherLayoutIsRefusedWithAClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE messages (x TEXT); PRAGMA user_version = 9;`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "has layout 9, and this myelin reads layout 8") {
		t.Fatalf("err = %v", err)
	}
}

// Two processes starting in a fresh workspace open one new store at once:
// each must find it whole, never half made ("has layout 0" was the error
// while the other was still making it).
func TestStoresOpenedAtOnceOnANewFileAllFindItMade(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), fmt.Sprint("h", round, ".db"))
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				s, err := Open(path)
				if err == nil {
					err = s.Close()
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Messages keeps what it read with room to grow and appends the messages
// of a later read in place, without copying those it read before; a
// slice it returned earlier is not changed by that (nor can a caller's
// append to it reach the store's).
func TestMessagesAppendsWhatIsNewInPlaceAndLeavesEarlierSlicesAlone(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	msg := func(text string) history.Message {
		return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: text}}}
	}
	if err := s.Append(ctx, "c1", msg("one"), msg("two")); err != nil {
		t.Fatal(err)
	}
	first, err := s.Messages(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || cap(first) != 2 {
		t.Fatalf("first read: len %d cap %d, want 2 and 2", len(first), cap(first))
	}
	// a caller's append copies: the store's messages stay as they were
	mine := append(first, msg("mine"))
	mine[0] = msg("changed")
	for round := range 3 {
		if err := s.Append(ctx, "c1", msg(fmt.Sprintf("round %d", round))); err != nil {
			t.Fatal(err)
		}
		again, err := s.Messages(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != 3+round || cap(again) != len(again) || again[2+round].Parts[0].Text != fmt.Sprintf("round %d", round) {
			t.Fatalf("read after round %d: %d messages (cap %d), want %d", round, len(again), cap(again), 3+round)
		}
		if &again[0] != &first[0] {
			t.Errorf("read after round %d: the messages read before were copied", round)
		}
		if len(first) != 2 || first[0].Parts[0].Text != "one" || first[1].Parts[0].Text != "two" {
			t.Errorf("read after round %d: the first slice changed: %v", round, first)
		}
		if again[0].Parts[0].Text != "one" {
			t.Errorf("read after round %d: a caller's append to its slice reached the store: %v", round, again[0])
		}
	}
}

// A synced write whose sync fails is an error that says it is committed
// but not on disk, and wraps the sync's error; what it wrote is in the
// store, and a later read finds it (the store keeps what it appended).
func TestASyncThatFailsSaysTheWriteIsCommittedButNotOnDisk(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	diskGone := errors.New("the disk went away")
	s.logs.syncFile = func(*os.File, uintptr) error { return diskGone }
	err := s.Append(ctx, "c", userText("written"))
	if !errors.Is(err, diskGone) || !strings.Contains(err.Error(), "committed, but not on disk") {
		t.Fatalf("the append whose sync failed returned %v, want an error saying it is committed but not on disk, wrapping the sync's", err)
	}
	msgs, err := s.Messages(ctx, "c")
	if err != nil || len(msgs) != 1 || msgs[0].Parts[0].Text != "written" {
		t.Fatalf("after the failed sync the store holds %+v (%v), want the message written", msgs, err)
	}
}

// The store keeps the messages of at most readKept conversations: a
// server that reads more over its life forgets the least recently used,
// and a forgotten conversation's next read returns it whole, as stored.
func TestTheStoreKeepsTheMessagesOfAtMostReadKeptConversations(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := history.Lazy(context.Background())
	n := readKept + 40
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, id, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: id}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Messages(ctx, id); err != nil {
			t.Fatal(err)
		}
		// c0 is used again and again: the least recently used go first
		if _, err := s.Messages(ctx, "c0"); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	kept, used := len(s.read), len(s.used)
	_, c0 := s.read["c0"]
	_, c1 := s.read["c1"]
	_, last := s.read[fmt.Sprintf("c%d", n-1)]
	s.mu.Unlock()
	if kept > readKept || used != kept {
		t.Fatalf("after reading %d conversations the store keeps %d (%d marked used), want at most %d", n, kept, used, readKept)
	}
	if !c0 || !last || c1 {
		t.Errorf("kept c0 %v, the last read %v, c1 (least recently used) %v; want true, true, false", c0, last, c1)
	}
	got, err := s.Messages(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Parts[0].Text != "c1" {
		t.Fatalf("c1 read again after it was forgotten: %+v, want its one message", got)
	}
}
