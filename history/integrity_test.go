package history

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// storeWithMessages makes a closed store at dir/h.db holding conversation
// "c" with the sample messages, and returns its path.
func storeWithMessages(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "h.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Create(ctx, Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", sampleMessages()...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpeningABrokenStoreFileSaysWhatIsWrong(t *testing.T) {
	old := time.Now().Add(-time.Minute)
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		wants []string
	}{
		{"an empty file, written a minute ago", func(t *testing.T, path string) {
			writeFile(t, path, nil)
			os.Chtimes(path, old, old)
		}, []string{"empty file (0 bytes", "not taken for a new one"}},
		{"a text file", func(t *testing.T, path string) {
			writeFile(t, path, []byte(strings.Repeat("not a database\n", 20)))
		}, []string{"is not a SQLite database", `"not a database\n`}},
		{"a file shorter than the header", func(t *testing.T, path string) {
			writeFile(t, path, []byte(sqliteMagic+"\x10\x00"))
		}, []string{"is truncated: 18 bytes, shorter than a SQLite header"}},
		{"a store cut in the middle of a page", func(t *testing.T, path string) {
			storeWithMessages(t, filepath.Dir(path))
			if err := os.Truncate(path, 5000); err != nil {
				t.Fatal(err)
			}
		}, []string{"5000 bytes is not a whole number of 4096-byte pages"}},
		{"a store cut after its first page", func(t *testing.T, path string) {
			storeWithMessages(t, filepath.Dir(path))
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
		}, []string{"is truncated: 4096 bytes, but its header counts"}},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not a regular file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.db")
			tc.make(t, path)
			s, err := OpenSQLite(path)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			for _, want := range append(tc.wants, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// A 0-byte file written just now is a store another process is creating:
// it is opened (SQLite's locks order the two), not refused.
func TestAnEmptyStoreFileBeingCreatedIsOpened(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	writeFile(t, path, nil)
	s := openStore(t, path)
	if err := s.Create(context.Background(), Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
}

func TestAMissingStoreFileIsANewStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "h.db")
	s := openStore(t, path)
	if list, err := s.List(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("list %v, %v", list, err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
