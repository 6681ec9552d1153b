//go:build !linux

package sqlite

import "os"

// syncData syncs f to disk (os.File.Sync: fsync, or F_FULLFSYNC on
// macOS).
func syncData(f *os.File, _ uintptr) error { return f.Sync() }

// fileID is which file a name leads to, as os.SameFile compares them.
type fileID struct{ fi os.FileInfo }

// same reports whether a and b are the same file.
func (a fileID) same(b fileID) bool { return a.fi != nil && b.fi != nil && os.SameFile(a.fi, b.fi) }

// fileAt is the file at path.
func fileAt(path string) (fileID, error) {
	fi, err := os.Stat(path)
	return fileID{fi}, err
}

// fileOf is the file f has open.
func fileOf(f *os.File) (fileID, error) {
	fi, err := f.Stat()
	return fileID{fi}, err
}
