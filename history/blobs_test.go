package history

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// blobsStore is a Store that keeps files' bytes.
type blobsStore interface {
	Store
	Blobs
}

// TestEveryStoreKeepsTheBlobsContract runs checkBlobsContract on each
// store of stores that implements Blobs (a new store joins by being
// added to stores).
func TestEveryStoreKeepsTheBlobsContract(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s, ok := st.open(t, time.Now).(blobsStore)
			if !ok {
				t.Skipf("%s keeps no blobs", st.name)
			}
			checkBlobsContract(t, s)
		})
	}
}

// checkBlobsContract checks the behaviours of Blobs that every store
// keeps, on s, which must hold no conversation "b1" or "b2": a store
// under test calls it with a fresh store.
func checkBlobsContract(t *testing.T, s blobsStore) {
	t.Helper()
	ctx := context.Background()
	for _, id := range []string{"b1", "b2"} {
		if err := s.Create(ctx, Conversation{ID: id, System: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	const spill = ".myelin/tool-results/20261203-call_1.txt"
	text := []byte("line 1\nline 2\n")
	binary := []byte{0, 0xff, 0xfe, 'x', 0, '\n'}
	type put struct {
		id, path string
		data     []byte
		want     error  // nil: kept
		says     string // words the error must hold
	}
	steps := []struct {
		name string
		put  put
	}{
		{"a new file is kept", put{id: "b1", path: spill, data: text}},
		{"the same bytes again are a no-op", put{id: "b1", path: spill, data: text}},
		{"other bytes at a kept path are refused, saying so", put{id: "b1", path: spill, data: []byte("line 1\n"), want: ErrBlobTaken, says: spill}},
		{"the same bytes under another path are kept", put{id: "b1", path: ".myelin/tool-results/copy.txt", data: text}},
		{"the same path in another conversation is its own", put{id: "b2", path: spill, data: binary}},
		{"binary bytes are kept as they are", put{id: "b1", path: ".myelin/tool-results/a.bin", data: binary}},
		{"an empty file is kept", put{id: "b1", path: ".myelin/tool-results/empty.txt", data: []byte{}}},
		{"an unknown conversation is not found", put{id: "nope", path: spill, data: text, want: ErrNotFound, says: "nope"}},
		{"no conversation id is refused", put{id: "", path: spill, data: text, want: errAny, says: "no conversation"}},
		{"no path is refused", put{id: "b1", path: "", data: text, want: errAny, says: "no path"}},
	}
	for _, st := range steps {
		hash, err := s.PutBlob(ctx, st.put.id, st.put.path, st.put.data)
		switch {
		case st.put.want == nil && err != nil:
			t.Fatalf("%s: PutBlob: %v", st.name, err)
		case st.put.want == nil && hash != BlobHash(st.put.data):
			t.Fatalf("%s: PutBlob's hash is %q, want BlobHash's %q", st.name, hash, BlobHash(st.put.data))
		case st.put.want == errAny && err == nil, st.put.want != nil && st.put.want != errAny && !errors.Is(err, st.put.want):
			t.Fatalf("%s: PutBlob = %v, want an error wrapping %v", st.name, err, st.put.want)
		case st.put.want != nil && !strings.Contains(err.Error(), st.put.says):
			t.Fatalf("%s: the error %q does not say %q", st.name, err, st.put.says)
		}
	}

	reads := []struct {
		name     string
		id, path string
		want     []byte // nil: not found
	}{
		{"a kept file comes back", "b1", spill, text},
		{"a refused put left the first bytes", "b1", spill, text},
		{"the second path of the same bytes", "b1", ".myelin/tool-results/copy.txt", text},
		{"the other conversation's file at that path", "b2", spill, binary},
		{"binary bytes come back byte for byte", "b1", ".myelin/tool-results/a.bin", binary},
		{"an empty file comes back empty", "b1", ".myelin/tool-results/empty.txt", []byte{}},
		{"a path never kept is not found", "b1", ".myelin/tool-results/other.txt", nil},
		{"a path of another conversation is not found", "b2", ".myelin/tool-results/a.bin", nil},
		{"an unknown conversation is not found", "nope", spill, nil},
	}
	for _, r := range reads {
		hash, data, err := s.BlobAt(ctx, r.id, r.path)
		if r.want == nil {
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: BlobAt = %q, %v; want ErrNotFound", r.name, data, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(data, r.want) || data == nil || hash != BlobHash(r.want) {
			t.Fatalf("%s: BlobAt = %q, %q, %v; want %q, %q", r.name, hash, data, err, r.want, BlobHash(r.want))
		}
		byHash, err := s.BlobByHash(ctx, hash)
		if err != nil || !bytes.Equal(byHash, r.want) {
			t.Fatalf("%s: BlobByHash(%s) = %q, %v; want %q", r.name, hash, byHash, err, r.want)
		}
	}
	if data, err := s.BlobByHash(ctx, BlobHash([]byte("never kept"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("BlobByHash of bytes never kept = %q, %v; want ErrNotFound", data, err)
	}

	// what a caller does with the slices it gave or got changes nothing kept
	mine := []byte("mine\n")
	if _, err := s.PutBlob(ctx, "b1", ".myelin/tool-results/mine.txt", mine); err != nil {
		t.Fatal(err)
	}
	mine[0] = 'X'
	_, got, err := s.BlobAt(ctx, "b1", ".myelin/tool-results/mine.txt")
	if err != nil || string(got) != "mine\n" {
		t.Fatalf("after the caller changed the bytes it gave: %q, %v; want %q", got, err, "mine\n")
	}
	got[0] = 'Y'
	if _, again, _ := s.BlobAt(ctx, "b1", ".myelin/tool-results/mine.txt"); string(again) != "mine\n" {
		t.Fatalf("after the caller changed the bytes it got: %q; want %q", again, "mine\n")
	}
}

// errAny stands for "some error" in checkBlobsContract's table.
var errAny = errors.New("any error")

func TestTheSQLiteStoreIsNotSharedAndAMemoryIsWhenAsked(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Blobs
		want bool
	}{
		{"sqlite", openStore(t, filepath.Join(t.TempDir(), "h.db")), false},
		{"memory", &Memory{}, false},
		{"memory sharing blobs", &Memory{ShareBlobs: true}, true},
	} {
		if got := c.s.Shared(); got != c.want {
			t.Errorf("%s: Shared() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestASQLiteStoreThatNeverKeptAFileHasNoBlobTablesAndFindsNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	if err := s.Create(ctx, Conversation{ID: "c", System: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BlobAt(ctx, "c", ".myelin/tool-results/x.txt"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("BlobAt in a store without blobs: %v; want ErrNotFound", err)
	}
	if _, err := s.BlobByHash(ctx, BlobHash(nil)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("BlobByHash in a store without blobs: %v; want ErrNotFound", err)
	}
	if tables := blobTables(t, s); tables != 0 {
		t.Fatalf("reading made %d blob tables; a store that never kept a file must stay as it was", tables)
	}
	if _, err := s.PutBlob(ctx, "c", ".myelin/tool-results/x.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if tables := blobTables(t, s); tables != 2 {
		t.Fatalf("after a file was kept there are %d blob tables, want 2", tables)
	}
	s.Close()
	s = openStore(t, path)
	if _, data, err := s.BlobAt(ctx, "c", ".myelin/tool-results/x.txt"); err != nil || string(data) != "x" {
		t.Fatalf("after a reopen: %q, %v; want %q", data, err, "x")
	}
}

// blobTables counts the blob tables of s.
func blobTables(t *testing.T, s *SQLite) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('blobs', 'blob_files')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAFileOverMaxBlobIsRefusedBeforeAnythingIsRead(t *testing.T) {
	err := checkBlob("keeping file f of conversation c", "c", "f", MaxBlob+1)
	if err == nil || !strings.Contains(err.Error(), "over the") || !strings.Contains(err.Error(), "keeping file f") {
		t.Fatalf("checkBlob of MaxBlob+1 bytes: %v; want an error naming the file and the bound", err)
	}
	if err := checkBlob("x", "c", "f", MaxBlob); err != nil {
		t.Fatalf("checkBlob of MaxBlob bytes: %v; want none", err)
	}
}
