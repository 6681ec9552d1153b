package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

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

// A log removed from under SQLite, which writes on to the file it has
// open, is still synced: the file the sync keeps open is that one.
func TestALogRemovedUnderSQLiteIsStillTheOneSynced(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(s.path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.path + "-wal"); err != nil {
		t.Fatal(err)
	}
	var synced []os.FileInfo
	s.logs.syncFile = func(f *os.File, fd uintptr) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		synced = append(synced, fi)
		return syncData(f, fd)
	}
	msg := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "after"}}}
	if err := s.Append(ctx, "c", msg); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || !os.SameFile(synced[0], before) {
		t.Fatalf("the synced append synced %d files, want 1, the log SQLite writes to", len(synced))
	}
	if msgs, err := s.Messages(ctx, "c"); err != nil || len(msgs) != 1 {
		t.Fatalf("messages %v, %v", msgs, err)
	}
}
