package rewind_test

import (
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
)

// stores are the stores a test runs on: Memory, and SQLite in a file of
// its own.
func stores(t *testing.T) []struct {
	name  string
	store history.Store
} {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return []struct {
		name  string
		store history.Store
	}{{"memory", &history.Memory{}}, {"sqlite", s}}
}
