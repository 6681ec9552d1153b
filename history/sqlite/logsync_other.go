//go:build !linux

package sqlite

import "os"

// syncData syncs f to disk (os.File.Sync: fsync, or F_FULLFSYNC on
// macOS).
func syncData(f *os.File, _ uintptr) error { return f.Sync() }
