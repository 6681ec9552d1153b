package sqlite

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// sideFiles are the files SQLite keeps beside a store's file, by their
// suffix: its write-ahead log, the log's shared-memory index, and a
// rollback journal. A log or journal holds the store's last writes (or,
// for a journal, the pages they replaced) until they reach the file.
var sideFiles = []string{"-wal", "-shm", "-journal"}

// sideFile is one of a store's side files that is there, and its size.
type sideFile struct {
	path string
	size int64
}

func (f sideFile) String() string { return fmt.Sprintf("%s (%d bytes)", f.path, f.size) }

// sidesOf returns the side files of the store at path that are there.
func sidesOf(path string) ([]sideFile, error) {
	var out []sideFile
	for _, suffix := range sideFiles {
		fi, err := os.Stat(path + suffix)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("history store %s: %w", path, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("history store %s: %s is not a regular file (%s): move it away", path, path+suffix, fi.Mode().Type())
		}
		out = append(out, sideFile{path + suffix, fi.Size()})
	}
	return out, nil
}

// listed is the side files named for people: "a (1 bytes) and b (2
// bytes)".
func listed(files []sideFile) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.String()
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// checkFile checks what is cheap to check about the store at path before
// SQLite opens it, and reports whether nothing at all is there — no file,
// no side file — where alone a new store may be made. Anything else must be
// a store: a regular file holding a SQLite header, whole pages, at least as
// many pages as its header counts, and a write-ahead log, if there is one,
// whose header is whole. It refuses an empty file (of any age, beside side
// files or not) and side files without their store: SQLite takes the first
// for a new store and deletes a log or journal beside it as it opens it,
// and makes a new file beside the second, then deletes them. It reads the
// first 100 bytes of the file and 32 of its log; it changes nothing. With
// noFollow, the file, its side files and its directory must not be
// symbolic links.
func checkFile(path string, noFollow bool) (none bool, err error) {
	if noFollow {
		if err := refuseLinks(path); err != nil {
			return false, err
		}
	}
	// The side files first: another process opening a store it has just
	// made makes them after the file, so a file missing after them is
	// missing indeed, not made meanwhile.
	sides, err := sidesOf(path)
	if err != nil {
		return false, err
	}
	fi, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("history store %s: %w", path, err)
	}
	if err != nil { // the file is not there
		if len(sides) == 0 {
			return true, nil
		}
		return false, fmt.Errorf("history store %s is not there, but %s %s: they are a store's, and not taken for a new one (making one, SQLite would delete them); nothing was changed. If the store was moved, move them with it; if it was removed, its last writes may be in its write-ahead log or journal and the rest is lost unless you have a copy of %s: put the copy back with them beside it. To start a new store, move them aside, or give another --store", path, listed(sides), isAre(sides), filepath.Base(path))
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("history store %s is not a regular file (%s): it cannot be a history store", path, fi.Mode().Type())
	}
	size := fi.Size()
	if size == 0 {
		if len(sides) == 0 {
			return false, fmt.Errorf("history store %s is an empty file (0 bytes, last written %s): it holds no conversations, and it is not taken for a new one; if it should hold some, put a copy of the store back in its place, and to start a new store, move it away or give another --store", path, fi.ModTime().UTC().Format(time.RFC3339))
		}
		return false, fmt.Errorf("history store %s is an empty file (0 bytes) beside %s: it is not taken for a new store, and nothing was changed (opening an empty database, SQLite deletes the log or journal beside it). Its last writes may be in its write-ahead log or rollback journal, and the rest is lost unless you have a copy: move %s and these files aside together, keep them, and put a copy of the store back as %s with them beside it if you have one; to start a new store, leave them aside", path, listed(sides), filepath.Base(path), filepath.Base(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("history store %s: %w", path, err)
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, fmt.Errorf("history store %s: reading its header: %w", path, err)
	}
	if n >= len(sqliteMagic) && string(h[:len(sqliteMagic)]) != sqliteMagic || n < len(sqliteMagic) && string(h[:n]) != sqliteMagic[:n] {
		return false, fmt.Errorf("history store %s is not a SQLite database: its first bytes are %q, not %q", path, h[:min(n, len(sqliteMagic))], sqliteMagic)
	}
	if n < len(h) {
		return false, fmt.Errorf("history store %s is truncated: %d bytes, shorter than a SQLite header (100 bytes)", path, size)
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return false, fmt.Errorf("history store %s has a damaged header: page size %d is not a power of two from 512 to 65536", path, pageSize)
	}
	if size%pageSize != 0 {
		return false, fmt.Errorf("history store %s is truncated or damaged: %d bytes is not a whole number of %d-byte pages", path, size, pageSize)
	}
	walSize := int64(-1) // no -wal file
	for _, sf := range sides {
		if sf.path == path+"-wal" {
			walSize = sf.size
		}
	}
	// The header's page count is valid when the change counter matches
	// the one it was written with. With a write-ahead log beside the file,
	// pages may still be on their way in (a checkpoint cut short): SQLite
	// finishes it from the log.
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	valid := pages > 0 && binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96])
	if valid && walSize <= 0 && size < pages*pageSize {
		return false, fmt.Errorf("history store %s is truncated: %d bytes, but its header counts %d pages of %d bytes (%d bytes)", path, size, pages, pageSize, pages*pageSize)
	}
	if walSize > 0 {
		return false, checkLog(path, walSize)
	}
	return false, nil
}

// isAre is "is" or "are", as many as files.
func isAre(files []sideFile) string {
	if len(files) == 1 {
		return "is"
	}
	return "are"
}

// walHeaderSize is the size of a write-ahead log's header.
const walHeaderSize = 32

// checkLog checks the header of the store's write-ahead log (size bytes):
// its magic number, format, page size and checksum. SQLite takes a log
// whose header fails any of them for an empty one — and deletes it when
// the store closes, with every commit in it. A log shorter than its header
// was cut before anything was committed in it (the header is written, and
// synced, before the first frame), and is not refused.
func checkLog(path string, size int64) error {
	if size < walHeaderSize {
		return nil
	}
	wal := path + "-wal"
	// Read until two reads agree: another process may be writing the
	// header at that moment (starting the log anew).
	var h [walHeaderSize]byte
	for try := 0; ; try++ {
		first, err1 := readHeader(wal)
		again, err2 := readHeader(wal)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("history store %s: %w", path, err)
		}
		if first == nil || again == nil {
			return nil // gone, or cut short, since: checkpointed, or reset
		}
		if bytes.Equal(first, again) || try == 9 {
			copy(h[:], again)
			break
		}
		time.Sleep(time.Millisecond)
	}
	var what string
	magic, pageSize := binary.BigEndian.Uint32(h[0:4]), binary.BigEndian.Uint32(h[8:12])
	switch {
	case magic&^1 != 0x377f0682:
		what = fmt.Sprintf("its magic number is %08x, not 377f0682 or 377f0683", magic)
	case binary.BigEndian.Uint32(h[4:8]) != 3007000:
		what = fmt.Sprintf("its format is %d, not 3007000", binary.BigEndian.Uint32(h[4:8]))
	case pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0:
		what = fmt.Sprintf("its page size %d is not a power of two from 512 to 65536", pageSize)
	default:
		s1, s2 := walChecksum(h[:24], magic&1 == 1)
		if s1 != binary.BigEndian.Uint32(h[24:28]) || s2 != binary.BigEndian.Uint32(h[28:32]) {
			what = fmt.Sprintf("its checksum is %08x %08x, but its bytes sum to %08x %08x", binary.BigEndian.Uint32(h[24:28]), binary.BigEndian.Uint32(h[28:32]), s1, s2)
		}
	}
	if what == "" {
		return nil
	}
	return fmt.Errorf("history store %s: the header of its write-ahead log %s (%d bytes) is damaged: %s. SQLite would take the log for empty, and delete it with the store's last writes in it when the store closed: the store is not opened, and nothing was changed. Keep a copy of both files; moving the log aside opens the store as it was before the writes only the log holds", path, wal, size, what)
}

// readHeader reads the header of the write-ahead log at wal: nil when the
// log is not there or shorter than its header.
func readHeader(wal string) ([]byte, error) {
	f, err := os.Open(wal)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the header of the write-ahead log %s: %w", wal, err)
	}
	defer f.Close()
	h := make([]byte, walHeaderSize)
	if _, err := io.ReadFull(f, h); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the header of the write-ahead log %s: %w", wal, err)
	}
	return h, nil
}

// walChecksum is SQLite's checksum of a write-ahead log's header (its
// first 24 bytes, b): two running sums of its 32-bit words, read big-endian
// when the log's magic number says so (bigEndian), else little-endian.
func walChecksum(b []byte, bigEndian bool) (s1, s2 uint32) {
	word := binary.LittleEndian.Uint32
	if bigEndian {
		word = binary.BigEndian.Uint32
	}
	for i := 0; i+8 <= len(b); i += 8 {
		s1 += word(b[i:]) + s2
		s2 += word(b[i+4:]) + s1
	}
	return s1, s2
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
			return fmt.Errorf("history store %s: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(p)
			return fmt.Errorf("history store %s: %s is a symbolic link (to %s), and the store follows none here: remove the link, or give another --store", path, p, to)
		}
	}
	return nil
}

// sqliteURI is the "file:" URI SQLite opens the file at path by, with
// query: the driver hands SQLite a "file:" name as a URI, where a '?' or
// '#' ends the path and %XX is decoded, so those three are escaped — the
// file opened is the one named, never another beside it.
func sqliteURI(path, query string) string {
	var b strings.Builder
	b.WriteString("file:")
	if strings.HasPrefix(path, "//") {
		b.WriteString("//") // an empty authority: the path's own slashes follow
	}
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString("?")
	b.WriteString(query)
	return b.String()
}

// createFile makes a new store at path, where checkFile found nothing:
// made whole under a name of its own beside it, then linked to path. A
// link is never made over a file that is there, so a store another
// process made at path meanwhile is kept (and opened: createFile returns
// nil), and no process ever sees the file empty or half made. Only the
// files createFile itself made under its own name are removed.
func createFile(path string) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("history store %s: making its directory: %w", path, err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := fmt.Sprintf("%s.new-%d-%x", path, os.Getpid(), rnd)
	// made here first, excluding any file (or link) there: SQLite then
	// opens the file made, never one planted at the name
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("history store %s: making a new store: %w", path, err)
	}
	f.Close()
	defer func() {
		for _, suffix := range append([]string{""}, sideFiles...) {
			_ = os.Remove(tmp + suffix) // its own, under its own name
		}
	}()
	if err := buildStore(tmp, path); err != nil {
		return err
	}
	if sides, _ := sidesOf(tmp); len(sides) > 0 {
		return fmt.Errorf("history store %s: the new store %s kept %s after it was closed", path, tmp, listed(sides))
	}
	err = os.Link(tmp, path)
	if errors.Is(err, fs.ErrExist) {
		return nil // made by another process meanwhile: opened as found
	}
	if err != nil {
		// a file system without hard links: copied, made exclusively
		if err := copyNew(tmp, path); err != nil {
			return err
		}
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the new name on disk too, where the system allows
		d.Close()
	}
	return nil
}

// buildStore makes a new store's tables in the empty file at tmp, in
// rollback-journal mode, then switches it to WAL (a setting kept in the
// file's header) and closes it: the file holds the whole store, and no
// log is left beside it. path is the store's name, for errors.
func buildStore(tmp, path string) error {
	db, err := sql.Open("sqlite", sqliteURI(tmp, "mode=rw&_pragma=journal_mode(DELETE)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"))
	if err != nil {
		return fmt.Errorf("history store %s: making a new store: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path}
	if err := s.migrate(true); err != nil {
		return err
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode = WAL`).Scan(&mode); err != nil || mode != "wal" {
		return fmt.Errorf("history store %s: making a new store: switching it to WAL gave %q: %w", path, mode, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("history store %s: making a new store: %w", path, err)
	}
	return nil
}

// copyNew copies the new store at tmp to path, where it makes the file
// exclusively (O_EXCL): for a file system that has no hard links. A file
// there already is kept (nil, as for a link). While it is copied, another
// process sees it short, and refuses it, instead of taking it for new.
func copyNew(tmp, path string) error {
	src, err := os.Open(tmp)
	if err != nil {
		return fmt.Errorf("history store %s: making a new store: %w", path, err)
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history store %s: making a new store: %w", path, err)
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path) // made by this call, exclusively, and not whole
		return fmt.Errorf("history store %s: making a new store: %w", path, err)
	}
	return nil
}
