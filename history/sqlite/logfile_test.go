package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// The log's sync knows the log by what its name leads to (fileAt), and
// the file it keeps open by what that is (fileOf): the two must agree on
// the same file and tell a file put at the name since from it.
func TestFileAtNamesTheFileOpenThereAndNoOther(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	open, err := fileOf(f)
	if err != nil {
		t.Fatal(err)
	}
	atA, err := fileAt(a)
	if err != nil || !atA.same(open) || !open.same(atA) {
		t.Fatalf("the file at %s (%v, %v) is not the one open there (%v)", a, atA, err, open)
	}
	atB, err := fileAt(b)
	if err != nil || atB.same(open) {
		t.Fatalf("the file at %s (%v, %v) is taken for the one open at %s", b, atB, err, a)
	}
	if err := os.Rename(b, a); err != nil {
		t.Fatal(err)
	}
	if now, err := fileAt(a); err != nil || now.same(open) || !now.same(atB) {
		t.Fatalf("after %s was put at %s, the file there (%v, %v) is not it", b, a, now, err)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if _, err := fileAt(a); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("fileAt of a name with nothing there: %v, want fs.ErrNotExist", err)
	}
	if (fileID{}).same(fileID{}) {
		t.Fatal("no file is the same as no file")
	}
}

// A log removed or replaced from under SQLite while the store's
// connection writes it (something else deleted or renamed the -wal
// file): SQLite writes on to the file it has open, which has no name, so
// its commits are lost with a crash. A synced write then fails as one
// whose sync failed — committed, not on disk — and so does every later
// one of that store handle, not reported on disk. (Before, the removed
// log was synced and the write reported on disk; a review found that a
// copy of the store's files by name then held none of it.)
func TestASyncedWriteAfterItsLogWasRemovedOrReplacedUnderSQLiteIsNotReportedOnDisk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		do    func(wal string) error
		wants string
	}{
		{"removed", os.Remove, "was removed while the store had it open"},
		{"replaced", func(wal string) error {
			if err := os.WriteFile(wal+".new", nil, 0o600); err != nil {
				return err
			}
			return os.Rename(wal+".new", wal)
		}, "was replaced by another file while the store had it open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(filepath.Join(t.TempDir(), "h.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			if err := tc.do(s.path + "-wal"); err != nil {
				t.Fatal(err)
			}
			msg := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "after"}}}
			for i := range 2 {
				err := s.Append(ctx, "c", msg)
				var unsynced *unsyncedError
				if !errors.As(err, &unsynced) || !strings.Contains(err.Error(), tc.wants) {
					t.Fatalf("synced append %d after the log was %s: %v; want it committed but not on disk, saying so", i+1, tc.name, err)
				}
			}
		})
	}
}

// A connection of the store's that closes (database/sql closes one it
// found bad, or keeps none idle) checkpoints its log and, the last,
// removes it; the next makes a new one. That is no log removed from under
// SQLite: each synced write syncs the log there is, and what was written
// is in the store's files by name.
func TestSyncedWritesAcrossConnectionsThatCloseSyncEachNewLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.db.SetMaxIdleConns(0) // every connection closed as it is given back
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		msg := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprint("message ", i)}}}
		if err := s.Append(ctx, "c", msg); err != nil {
			t.Fatalf("synced append %d: %v", i+1, err)
		}
	}
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if msgs, err := other.Messages(ctx, "c"); err != nil || len(msgs) != 5 {
		t.Fatalf("another opening reads %d messages, %v; want 5", len(msgs), err)
	}
}

// Synced writes from four goroutines while the store's connection is
// closed under them now and then — database/sql keeping none idle, or
// discarding one a cancelled read interrupted — each close, the last,
// checkpointing the log and removing it: no synced write fails, for
// nothing removed the log from under SQLite. (A review found that a sync
// between SQLite's unlinking the log and the kept log being let go took
// it for one removed from under SQLite, and failed every later write.)
func TestSyncedWritesGoOnWhileTheStoresConnectionClosesUnderThem(t *testing.T) {
	t.Run("none kept idle", func(t *testing.T) { syncedWritesWhileTheConnectionCloses(t, false) })
	t.Run("a cancelled read's discarded", func(t *testing.T) { syncedWritesWhileTheConnectionCloses(t, true) })
}

func syncedWritesWhileTheConnectionCloses(t *testing.T, interrupt bool) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var failed atomic.Pointer[error]
	var n atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		id := fmt.Sprint("c", w)
		if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				msg := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprint(i)}}}
				if err := s.Append(ctx, id, msg); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if interrupt {
				// a read cancelled while SQLite runs it, the log all
				// checkpointed (as an auto-checkpoint leaves it): the
				// interrupted connection is discarded and, the last, unlinks the log
				s.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
				cctx, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
				var n int
				s.db.QueryRowContext(cctx, `WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(*) FROM r`).Scan(&n)
				cancel()
				continue
			}
			s.db.SetMaxIdleConns(0)
			s.db.SetMaxIdleConns(2)
			time.Sleep(time.Millisecond)
		}
	}()
	deadline := time.After(3 * time.Second)
	for failed.Load() == nil {
		select {
		case <-deadline:
			close(stop)
			wg.Wait()
			t.Logf("%d synced appends, none failed", n.Load())
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(stop)
	wg.Wait()
	t.Fatalf("after %d synced appends: %v", n.Load(), *failed.Load())
}
