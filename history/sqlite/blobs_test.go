package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// The behaviours every Blobs store keeps are in the conformance suite
// (history/storetest, blobs.go); these are the SQLite and Memory stores' own.

func TestTheSQLiteStoreIsNotSharedAndAMemoryIsWhenAsked(t *testing.T) {
	for _, c := range []struct {
		name string
		s    history.Blobs
		want bool
	}{
		{"sqlite", openStore(t, filepath.Join(t.TempDir(), "h.db")), false},
		{"memory", &history.Memory{}, false},
		{"memory sharing blobs", &history.Memory{ShareBlobs: true}, true},
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
	if err := s.Create(ctx, history.Conversation{ID: "c", System: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BlobAt(ctx, "c", ".myelin/tool-results/x.txt"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("BlobAt in a store without blobs: %v; want ErrNotFound", err)
	}
	if _, err := s.BlobByHash(ctx, history.BlobHash(nil)); !errors.Is(err, history.ErrNotFound) {
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
func blobTables(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('blobs', 'blob_files')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
