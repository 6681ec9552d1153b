//go:build unix

package leftover

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkTempDir pairs what a sandboxed command's temp dir cost before
// locks (MkdirTemp, EvalSymlinks, RemoveAll) with MakeDir and Remove (the
// same, and an open, a flock and two stats: lock-only times those alone),
// the sweep not due; and times a sweep of a directory of n entries, none
// of them a temp dir, as the first sandboxed command of a process (and one
// each sweepEvery after) pays it: a TMPDIR of n files (this machine's
// /tmp held about 650); and pairs a file's making before locks with
// Create's. Moved here from package child with the lock.
func BenchmarkTempDir(b *testing.B) {
	dir := b.TempDir()
	b.Setenv("TMPDIR", dir)
	k := emptyDirs()
	k.due(dir, time.Now()) // taken: the paired runs do not sweep
	b.Run("before", func(b *testing.B) {
		for b.Loop() {
			made, err := os.MkdirTemp("", k.Prefix)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := filepath.EvalSymlinks(made); err != nil {
				b.Fatal(err)
			}
			os.RemoveAll(made)
		}
	})
	b.Run("locked", func(b *testing.B) {
		for b.Loop() {
			d, err := k.MakeDir("")
			if err != nil {
				b.Fatal(err)
			}
			d.Remove()
		}
	})
	b.Run("lock-only", func(b *testing.B) { // what locked adds, apart from the noise of mkdir
		made := b.TempDir()
		for b.Loop() {
			f, err := lockDir(made)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	// A file's, as a large MCP reply's text and an output file outside a
	// workspace are made: CreateTemp, then Remove and Close (file/before),
	// against Create, which adds a dup, a flock and two stats (file/locked).
	fk := files()
	fk.due(dir, time.Now())
	b.Run("file/before", func(b *testing.B) {
		for b.Loop() {
			f, err := os.CreateTemp("", fk.Prefix+"*"+fk.Suffix)
			if err != nil {
				b.Fatal(err)
			}
			os.Remove(f.Name())
			f.Close()
		}
	})
	b.Run("file/locked", func(b *testing.B) {
		for b.Loop() {
			f, err := fk.Create()
			if err != nil {
				b.Fatal(err)
			}
			os.Remove(f.Name())
			f.Close()
		}
	})
	for _, n := range []int{650, 10000} {
		b.Run(fmt.Sprintf("sweep/%d", n), func(b *testing.B) {
			full := b.TempDir()
			for i := range n {
				if err := os.WriteFile(filepath.Join(full, fmt.Sprintf("f%d", i)), nil, 0o600); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				k.Sweep(full)
			}
		})
	}
}
