package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// writebacks counts the writebacks a store starts (logSync.startWrite),
// each held until release is closed.
type writebacks struct {
	mu      sync.Mutex
	files   []string
	release chan struct{}
	done    chan struct{} // one send as each returns
}

func countWritebacks(s *Store) *writebacks {
	w := &writebacks{release: make(chan struct{}), done: make(chan struct{}, 16)}
	s.logs.startWrite = func(f *os.File) {
		w.mu.Lock()
		w.files = append(w.files, f.Name())
		w.mu.Unlock()
		<-w.release
		w.done <- struct{}{}
	}
	return w
}

func (w *writebacks) started() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string{}, w.files...)
}

// waitStarted waits until n writebacks have started, or a second.
func (w *writebacks) waitStarted(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if got := w.started(); len(got) >= n {
			return got
		}
	}
	t.Fatalf("%d writebacks started, want %d", len(w.started()), n)
	return nil
}

// A lazy commit (the round's answer, a keep) starts writing the log's new
// pages to disk on another goroutine, so that the round's synced commit
// has less left to write; a synced commit starts none (its sync writes
// them), and one is under way at a time: a lazy commit while one is
// leaves its pages to the sync. A relaxed store, which syncs nothing,
// starts none.
func TestALazyCommitStartsWritingTheLogAheadOfTheSyncOneAtATime(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	w := countWritebacks(s)
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", userText("synced")); err != nil {
		t.Fatal(err)
	}
	if got := w.started(); len(got) != 0 {
		t.Fatalf("synced commits started writebacks of %v", got)
	}
	if err := s.Append(history.Lazy(ctx), "c", userText("lazy")); err != nil {
		t.Fatal(err)
	}
	if got := w.waitStarted(t, 1); got[0] != s.path+"-wal" {
		t.Errorf("the writeback is of %s, want the log %s", got[0], s.path+"-wal")
	}
	// under way: the next lazy commits start none
	if err := s.Keep(history.Lazy(ctx), "c", history.Part{Type: history.ToolResultPart, CallID: "1", Text: "kept"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(history.Lazy(ctx), "c", userText("lazy again")); err != nil {
		t.Fatal(err)
	}
	// and a synced write does not wait for it
	if err := s.Append(ctx, "c", userText("synced while one is under way")); err != nil {
		t.Fatal(err)
	}
	if got := w.started(); len(got) != 1 {
		t.Errorf("%d writebacks started while one was under way: %v", len(got)-1, got[1:])
	}
	close(w.release)
	<-w.done
	for deadline := time.Now().Add(time.Second); s.logs.writing.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := s.Keep(history.Lazy(ctx), "c", history.Part{Type: history.ToolResultPart, CallID: "2", Text: "kept"}); err != nil {
		t.Fatal(err)
	}
	w.waitStarted(t, 2)

	// a relaxed store
	relaxed, err := OpenWith(filepath.Join(t.TempDir(), "h.db"), Options{Relaxed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer relaxed.Close()
	rw := countWritebacks(relaxed)
	if err := relaxed.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := relaxed.Append(history.Lazy(ctx), "c", userText("lazy")); err != nil {
		t.Fatal(err)
	}
	if err := relaxed.Append(ctx, "c", userText("synced, but relaxed")); err != nil {
		t.Fatal(err)
	}
	if err := relaxed.Append(history.Lazy(ctx), "c", userText("lazy")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a writeback started would be counted by now
	if got := rw.started(); len(got) != 0 {
		t.Errorf("a relaxed store started writebacks of %v", got)
	}
	close(rw.release)
}

// A writeback under way when the store closes ends without error or
// effect: the log it writes is let go of under it (os.File keeps the
// descriptor open while it is used).
func TestAWritebackUnderWayWhenTheStoreClosesEnds(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan struct{})
	s.logs.startWrite = func(f *os.File) {
		close(inside)
		<-release
		startWrite(f) // the real one, on a file that may be closed by now
		close(done)
	}
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", userText("synced")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(history.Lazy(ctx), "c", userText("lazy")); err != nil {
		t.Fatal(err)
	}
	<-inside
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	close(release)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the writeback did not end after the store closed")
	}
}
