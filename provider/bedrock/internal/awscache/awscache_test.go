package awscache

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// createdMode is the mode os.OpenFile gives a new file asked for mode,
// under this process's umask.
func createdMode(t *testing.T, mode fs.FileMode) fs.FileMode {
	t.Helper()
	ref := filepath.Join(t.TempDir(), "reference")
	f, err := os.OpenFile(ref, os.O_CREATE|os.O_WRONLY, mode)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestReplaceLeavesTheDataWithTheModeAsCreated: a new path and an existing
// one (of another mode) both end with exactly the data, in a file of the
// mode asked for less the umask, and nothing else in the directory.
func TestReplaceLeavesTheDataWithTheModeAsCreated(t *testing.T) {
	for _, c := range []struct {
		name     string
		existing bool
		mode     fs.FileMode
	}{
		{"a new file, 0600", false, 0o600},
		{"a new file, 0666", false, 0o666},
		{"an existing 0644 file replaced 0600", true, 0o600},
		{"an existing 0644 file replaced 0640", true, 0o640},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "cache.json")
			if c.existing {
				if err := os.WriteFile(path, []byte(`{"old":"a much longer content than the new one"}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := Replace(path, []byte(`{"new":1}`), c.mode); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil || string(b) != `{"new":1}` {
				t.Errorf("file holds %q (%v)", b, err)
			}
			fi, _ := os.Stat(path)
			if want := createdMode(t, c.mode); fi.Mode().Perm() != want {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("directory holds %d entries, want 1", len(entries))
			}
		})
	}
}

// TestAFailedReplaceLeavesNoTemporaryFile: the rename fails (the path is
// a non-empty directory): an error naming the path, without the data,
// and nothing left beside it; a directory that does not exist is an
// error too.
func TestAFailedReplaceLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.json")
	if err := os.MkdirAll(filepath.Join(path, "occupied"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := Replace(path, []byte("secret-token"), 0o600)
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("Replace: %v, want an error naming the path and not the data", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1", len(entries))
	}
	if err := Replace(filepath.Join(dir, "missing", "cache.json"), []byte("x"), 0o600); err == nil {
		t.Error("Replace into a missing directory: no error")
	}
}

// TestAReaderNeverSeesATornFile: two writers replace one file over and
// over with contents of different lengths while a reader reads it; each
// read is one of the contents whole.
func TestAReaderNeverSeesATornFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.json")
	contents := [][]byte{bytes.Repeat([]byte("a"), 4096), bytes.Repeat([]byte("b"), 70000)}
	if err := os.WriteFile(path, contents[0], 0o600); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var torn atomic.Int32
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		for !stop.Load() {
			b, err := os.ReadFile(path)
			if err != nil || !(bytes.Equal(b, contents[0]) || bytes.Equal(b, contents[1])) {
				torn.Add(1)
			}
		}
	}()
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range 200 {
				if err := Replace(path, contents[w], 0o600); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	reader.Wait()
	if n := torn.Load(); n > 0 {
		t.Errorf("%d reads saw neither content whole", n)
	}
}
