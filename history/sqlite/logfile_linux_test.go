package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The whole stat, which fileAt and fileOf fall back to where statx fails,
// names a file as they do (the same device and inode), on every file
// system the store's file may be on: where the two disagreed, every sync
// would open the log again, and where they agreed wrongly, sync another
// file.
func TestTheWholeStatNamesAFileAsStatxDoes(t *testing.T) {
	made := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(made, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{made, "/", "/proc/self/stat", "/dev/null"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		byName, err1 := fileAt(path)
		open, err2 := fileOf(f)
		fi, err3 := f.Stat()
		f.Close()
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		whole, err := idOf(fi)
		if err != nil {
			t.Fatal(err)
		}
		if !byName.same(whole) || !open.same(whole) {
			t.Errorf("%s: fileAt %+v, fileOf %+v, the whole stat %+v: want one file", path, byName, open, whole)
		}
	}
}
