package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// creatingGrace is how long a 0-byte store file is taken for one another
// process is creating: SQLite creates the file empty and writes its header
// at once, in the same open (journal_mode=WAL), so a store file stays empty
// for a moment only. An empty file older than this is broken, and so is
// refused.
const creatingGrace = 5 * time.Second

// checkFile checks what is cheap to check about the store file at path
// before SQLite opens it: a missing file is a new store (nil);
// an existing one must be a regular file holding a SQLite header, whole
// pages, and at least as many pages as its header counts. It reads the
// first 100 bytes only. With noFollow, the file, its -wal, -shm and
// -journal files and its directory must not be symbolic links.
func checkFile(path string, noFollow bool, now time.Time) error {
	if noFollow {
		if err := refuseLinks(path); err != nil {
			return err
		}
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history store %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("history store %s is not a regular file (%s): it cannot be a history store", path, fi.Mode().Type())
	}
	walSize := int64(-1) // no -wal file
	if wi, err := os.Stat(path + "-wal"); err == nil {
		walSize = wi.Size()
	}
	size := fi.Size()
	if size == 0 {
		if walSize > 0 || now.Sub(fi.ModTime()) < creatingGrace {
			return nil // another process is creating it: SQLite's locks order the two
		}
		return fmt.Errorf("history store %s is an empty file (0 bytes, last written %s) with no write-ahead log beside it: it is not a history store, and it is not taken for a new one; move it away to start a new store, or give another --store", path, fi.ModTime().UTC().Format(time.RFC3339))
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("history store %s: %v", path, err)
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("history store %s: reading its header: %v", path, err)
	}
	if n >= len(sqliteMagic) && string(h[:len(sqliteMagic)]) != sqliteMagic || n < len(sqliteMagic) && string(h[:n]) != sqliteMagic[:n] {
		return fmt.Errorf("history store %s is not a SQLite database: its first bytes are %q, not %q", path, h[:min(n, len(sqliteMagic))], sqliteMagic)
	}
	if n < len(h) {
		return fmt.Errorf("history store %s is truncated: %d bytes, shorter than a SQLite header (100 bytes)", path, size)
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return fmt.Errorf("history store %s has a damaged header: page size %d is not a power of two from 512 to 65536", path, pageSize)
	}
	if size%pageSize != 0 {
		return fmt.Errorf("history store %s is truncated or damaged: %d bytes is not a whole number of %d-byte pages", path, size, pageSize)
	}
	// The header's page count is valid when the change counter matches
	// the one it was written with. With a write-ahead log beside the file,
	// pages may still be on their way in (a checkpoint cut short): SQLite
	// finishes it from the log.
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	valid := pages > 0 && binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96])
	if valid && walSize <= 0 && size < pages*pageSize {
		return fmt.Errorf("history store %s is truncated: %d bytes, but its header counts %d pages of %d bytes (%d bytes)", path, size, pages, pageSize, pages*pageSize)
	}
	return nil
}

// refuseLinks returns an error naming the first of the store's directory,
// the store file and its -wal, -shm and -journal files that is a symbolic
// link; each is looked at with Lstat, never followed. A missing one is
// fine (SQLite makes it, as a file).
func refuseLinks(path string) error {
	for _, p := range []string{filepath.Dir(path), path, path + "-wal", path + "-shm", path + "-journal"} {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("history store %s: %v", path, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(p)
			return fmt.Errorf("history store %s: %s is a symbolic link (to %s), and the store follows none here: remove the link, or give another --store", path, p, to)
		}
	}
	return nil
}
