package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// liveFiles makes a store at dir/h.db holding conversation "c" with the
// sample messages and returns the bytes of its file and of its
// write-ahead log as they are while it is still open: the last writes
// (the conversation) are in the log, not yet in the file, as after a
// process killed in the middle of its work.
func liveFiles(t *testing.T, dir string) (db, wal []byte) {
	t.Helper()
	path := filepath.Join(dir, "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.SampleMessages()...); err != nil {
		t.Fatal(err)
	}
	if db, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if wal, err = os.ReadFile(path + "-wal"); err != nil || len(wal) == 0 {
		t.Fatalf("the store's log while it is open: %d bytes, %v", len(wal), err)
	}
	return db, wal
}

// snapshot is what a directory holds: each file's name and bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// sameFiles fails the test when dir no longer holds exactly before.
func sameFiles(t *testing.T, dir string, before map[string]string, after string) {
	t.Helper()
	now := snapshot(t, dir)
	for name, b := range before {
		if got, ok := now[name]; !ok {
			t.Errorf("after %s, %s is gone (it held %d bytes)", after, name, len(b))
		} else if got != b {
			t.Errorf("after %s, %s changed: %d bytes, %d before", after, name, len(got), len(b))
		}
	}
	for name := range now {
		if _, ok := before[name]; !ok {
			t.Errorf("after %s, %s was made", after, name)
		}
	}
}

// The case and its class: a store file that is not there or is
// empty, beside files SQLite keeps for it (its log, its shared memory, a
// rollback journal), or an empty file alone of any age, is not a new
// store. Opening it — to read (Existing) or to write — is refused with an
// error naming what was found and how to recover, and leaves every file
// as it was: SQLite itself deletes a log or journal when it opens an
// empty database, so it must not see one.
func TestAStoreThatIsEmptyOrMissingBesideItsFilesIsRefusedAndNothingIsDeleted(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, dir string) // at dir/h.db
		wants []string
	}{
		{"an empty file beside its log holding the last turn", func(t *testing.T, dir string) {
			_, wal := liveFiles(t, t.TempDir())
			writeFile(t, filepath.Join(dir, "h.db"), nil)
			writeFile(t, filepath.Join(dir, "h.db-wal"), wal)
		}, []string{"is an empty file (0 bytes)", "h.db-wal (", "may be in its write-ahead log", "nothing was changed", "move"}},
		{"an empty file beside its log and shared memory", func(t *testing.T, dir string) {
			_, wal := liveFiles(t, t.TempDir())
			writeFile(t, filepath.Join(dir, "h.db"), nil)
			writeFile(t, filepath.Join(dir, "h.db-wal"), wal)
			writeFile(t, filepath.Join(dir, "h.db-shm"), make([]byte, 32768))
		}, []string{"is an empty file (0 bytes)", "h.db-wal (", "h.db-shm (32768 bytes)"}},
		{"an empty file beside a rollback journal", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "h.db"), nil)
			writeFile(t, filepath.Join(dir, "h.db-journal"), bytes.Repeat([]byte{1}, 4096))
		}, []string{"is an empty file (0 bytes)", "h.db-journal (4096 bytes)"}},
		{"an empty file written just now", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "h.db"), nil)
		}, []string{"is an empty file (0 bytes", "not taken for a new one", "move it away"}},
		{"an empty file written an hour ago", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "h.db"), nil)
			os.Chtimes(filepath.Join(dir, "h.db"), old, old)
		}, []string{"is an empty file (0 bytes", "not taken for a new one"}},
		{"a log without its store file", func(t *testing.T, dir string) {
			_, wal := liveFiles(t, t.TempDir())
			writeFile(t, filepath.Join(dir, "h.db-wal"), wal)
		}, []string{"is not there, but", "h.db-wal (", "not taken for a new one", "move"}},
		{"shared memory without its store file", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "h.db-shm"), make([]byte, 32768))
		}, []string{"is not there, but", "h.db-shm (32768 bytes)"}},
		{"a rollback journal without its store file", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "h.db-journal"), bytes.Repeat([]byte{1}, 512))
		}, []string{"is not there, but", "h.db-journal (512 bytes)"}},
	} {
		for _, existing := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, existing only %v", tc.name, existing), func(t *testing.T) {
				dir := t.TempDir()
				tc.make(t, dir)
				before := snapshot(t, dir)
				path := filepath.Join(dir, "h.db")
				s, err := OpenWith(path, Options{Existing: existing})
				if err == nil {
					list, _ := s.List(context.Background())
					s.Close()
					t.Errorf("opened, listing %d conversations", len(list))
				} else {
					for _, want := range append(tc.wants, path) {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q does not say %q", err, want)
						}
					}
					if errors.Is(err, fs.ErrNotExist) {
						t.Errorf("error %q is taken for no store at all (fs.ErrNotExist)", err)
					}
				}
				sameFiles(t, dir, before, "opening")
			})
		}
	}
}

// A store opened only if it is there (what a command that only reads
// asks) makes nothing when it is not: no file, no directory; the error
// wraps fs.ErrNotExist, so that the command can say there is no store
// yet.
func TestOpeningAnExistingStoreOnlyMakesNothing(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "sub", "h.db")
	s, err := OpenWith(path, Options{Existing: true})
	if err == nil {
		s.Close()
		t.Fatal("opened a store that is not there")
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "there is no history store at "+path) {
		t.Errorf("error %q does not say there is no store (and wrap fs.ErrNotExist)", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("made %v", entries)
	}
	// and a store that is there opens, and reads
	dir := t.TempDir()
	path = storeWithMessages(t, dir)
	s, err = OpenWith(path, Options{Existing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if msgs, err := s.Messages(context.Background(), "c"); err != nil || len(msgs) != 3 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
}

// A new store's file appears whole: made under another name, then linked
// into place, so no other process ever sees it empty or half made, and
// nothing else is left beside it.
func TestANewStoreLeavesOnlyItsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	s := openStore(t, path)
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("the new store's file: %v, %v", fi, err)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, n := range names {
		if n != "h.db" && n != "h.db-wal" && n != "h.db-shm" {
			t.Errorf("left %s beside the store (%v)", n, names)
		}
	}
	s.Close()
	entries, _ = os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "h.db" {
		t.Errorf("after closing, the directory holds %v; want h.db alone", entries)
	}
}

// A SQLite database with no tables (another program's, or one made empty
// by hand) is not a store: it is refused, not filled with tables.
func TestASQLiteFileWithNoTablesIsNotTakenForANewStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	damage(t, path, `PRAGMA user_version = 0; VACUUM`)
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("the empty database: %v, %v", fi, err)
	}
	before := snapshot(t, dir)
	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("opened")
	}
	if !strings.Contains(err.Error(), "has no tables") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not say the file has no tables", err)
	}
	sameFiles(t, dir, before, "opening")
}

// SQLite reads a "file:" name as a URI: a '?' ends the path, a '#' too,
// and %XX is decoded. A store path holding them is the path opened, not
// another file beside it.
func TestAStorePathIsOpenedAsItIsWritten(t *testing.T) {
	for i, name := range []string{"a?b.db", "a#b.db", "a%41.db", "a&mode=ro.db", "?", "%"} {
		t.Run(fmt.Sprint(i), func(t *testing.T) { // the name is not in the test's, nor in its directory's
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Create(context.Background(), history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, []string{name}) {
				t.Fatalf("the directory holds %q; want %q alone", names, name)
			}
			s, err = OpenWith(path, Options{Existing: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Get(context.Background(), "c"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A write-ahead log whose header is damaged is one SQLite takes for empty
// — and deletes when the store closes, with every commit in it. It is
// refused instead, and kept.
func TestALogWithADamagedHeaderIsRefusedAndKept(t *testing.T) {
	for _, at := range []int{0, 8, 12, 24, 28} { // magic, page size, checkpoint number, checksums
		t.Run(fmt.Sprint("byte ", at), func(t *testing.T) {
			db, wal := liveFiles(t, t.TempDir())
			dir := t.TempDir()
			path := filepath.Join(dir, "h.db")
			wal[at] ^= 0x01
			writeFile(t, path, db)
			writeFile(t, path+"-wal", wal)
			before := snapshot(t, dir)
			s, err := Open(path)
			if err == nil {
				msgs, err := s.Messages(context.Background(), "c")
				s.Close()
				t.Errorf("opened; conversation c reads %d messages (%v)", len(msgs), err)
			} else if !strings.Contains(err.Error(), path+"-wal") || !strings.Contains(err.Error(), "the header of its write-ahead log") || !strings.Contains(err.Error(), "is damaged") {
				t.Errorf("error %q does not say the log's header is damaged", err)
			}
			if t.Failed() {
				return
			}
			sameFiles(t, dir, before, "opening")
		})
	}
}

// A store whose last writes are still in its log, as a killed process
// leaves it, opens and reads them.
func TestAStoreWithItsLastWritesInItsLogReadsThem(t *testing.T) {
	db, wal := liveFiles(t, t.TempDir())
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	writeFile(t, path, db)
	writeFile(t, path+"-wal", wal)
	s, err := OpenWith(path, Options{Existing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if msgs, err := s.Messages(context.Background(), "c"); err != nil || len(msgs) != 3 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
}
