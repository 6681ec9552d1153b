// Package wholefile owns replacing a small file whole: the new content is
// written to a new file beside the old one (created O_EXCL, so never one
// that is there), given its permissions, closed and renamed over the old
// name, so that a reader sees the old content or the new, never a torn or
// empty file. A failed step removes the new file and leaves the old one
// as it was.
//
// Replace, and ReplaceIn with Synced, also sync the new file to disk
// before the rename and its directory after, so that a crash or power cut
// leaves the old content or the new whole at the name, never an empty or
// torn file; and once the call has returned, the new one, provided the
// directory's sync succeeded (it is best effort: its failure is not
// reported) and the directory itself was on disk — one the caller has
// just made (os.MkdirAll) is not synced into its parent here, so a crash
// may lose it and the file in it. ReplaceIn with Unsynced syncs neither:
// a crash may leave the old content, the new, or (on some file systems)
// an empty or partial file, as after any write a program does not sync.
//
// It is how myelin writes the files it replaces whole. Synced: the
// permission rules a person allowed "always", MCP OAuth tokens, trusted
// MCP servers and the AWS CLI's caches it refreshes — state myelin
// itself must not lose. Unsynced: the workspace tools' writes and edits
// and a rewind's put-backs (inside the workspace's os.Root) — the world's
// files, as durable as what a shell command writes there, and a rewind
// that puts back hundreds of files would take seconds with two syncs a
// file. It must not decide where a file lives, what it holds, which
// permissions it has or whether it is synced (its callers do), must not
// read the file, must not write through the old file (a hard link to it
// keeps the old content), must not remove anything but the temporary
// file it made, and must not put a file's content (tokens, keys) in an
// error.
package wholefile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"
)

// Perm is the permission bits a replaced file ends with: Exactly or
// Created. Its zero value is mode 0 exactly.
type Perm struct {
	bits  fs.FileMode
	umask bool
}

// Exactly is bits (their permission part) whatever the process umask:
// the permission rules, tokens and trusted servers are the user's alone
// (0600) even under an umask that would narrow that, and a workspace file
// the tools replace keeps its permissions.
func Exactly(bits fs.FileMode) Perm { return Perm{bits: bits.Perm()} }

// Created is bits less the process umask, as any file created with bits
// gets: for a file that behaves as a newly made one (the AWS CLI's caches,
// which its SDK makes so; a new file the workspace tools write).
func Created(bits fs.FileMode) Perm { return Perm{bits: bits.Perm(), umask: true} }

// String is the bits in octal, and "less the umask" for Created.
func (p Perm) String() string {
	s := fmt.Sprintf("%#o", uint32(p.bits))
	if p.umask {
		s += " less the umask"
	}
	return s
}

// Sync is whether ReplaceIn syncs the new file and its directory to disk:
// Synced or Unsynced, said at the call site. Replace always syncs.
type Sync bool

const (
	// Synced syncs the new file before the rename and its directory
	// after (best effort), as Replace does: for state myelin must not
	// lose to a crash.
	Synced Sync = true
	// Unsynced syncs neither the new file nor its directory, and changes
	// nothing else: for the workspace's files, which are as durable as
	// any program's writes there.
	Unsynced Sync = false
)

// String is "synced" or "unsynced".
func (s Sync) String() string {
	if s {
		return "synced"
	}
	return "unsynced"
}

// Replace puts data at path whole, with the permissions perm says: a new
// file beside path (".<name>.myelin-<random>.tmp", hidden and ending in
// neither the name nor its extension), written, its permissions set,
// synced, closed and renamed over path; then path's directory is synced.
// A reader sees the old file or the new one; of two processes or
// goroutines replacing path at once, the last rename wins, whole. A failed
// step removes the new file and leaves path as it was; the error says
// which step failed on which file and wraps the cause (errors.Is(err,
// fs.ErrPermission) for a directory it may not write). The directory's
// sync is the one step whose failure is not an error: the rename has been
// made by then, and some file systems cannot sync a directory at all.
// path's directory must exist.
func Replace(path string, data []byte, perm Perm) error {
	if err := replace(osDir{}, path, data, perm, Synced); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}

// ReplaceIn is Replace of the file name inside root (a path relative to
// it, as os.Root takes them): every step is root's, so no step leaves it,
// whatever links are in the path. With Unsynced it skips the new file's
// sync and its directory's, nothing else (see the package doc). The error
// wraps the cause without naming name again (the workspace says the path
// in its own words).
func ReplaceIn(root *os.Root, name string, data []byte, perm Perm, sync Sync) error {
	return replace(rootDir{root}, name, data, perm, sync)
}

// dir is where a file is replaced: the OS's file system, or an os.Root.
type dir interface {
	create(name string, perm fs.FileMode) (*os.File, error)
	rename(from, to string) error
	remove(name string) error
	open(name string) (*os.File, error)
}

type osDir struct{}

func (osDir) create(name string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}
func (osDir) rename(from, to string) error       { return os.Rename(from, to) }
func (osDir) remove(name string) error           { return os.Remove(name) }
func (osDir) open(name string) (*os.File, error) { return os.Open(name) }

type rootDir struct{ r *os.Root }

func (d rootDir) create(name string, perm fs.FileMode) (*os.File, error) {
	return d.r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}
func (d rootDir) rename(from, to string) error       { return d.r.Rename(from, to) }
func (d rootDir) remove(name string) error           { return d.r.Remove(name) }
func (d rootDir) open(name string) (*os.File, error) { return d.r.Open(name) }

// step, unless nil, is called before each step with its name ("create",
// "write", "chmod", "sync", "close", "rename", "syncdir") and the file it
// is on; an error it returns is that step's (for "close", the file is
// closed all the same). A test records the order of the steps there and
// fails one.
var step func(op, name string) error

// synced, unless nil, is called with each file (the new file, then its
// directory) just before it is synced: a test checks it is the right one.
var synced func(op string, f *os.File)

// syncFile syncs f, shown to synced first.
func syncFile(op string, f *os.File) error {
	if synced != nil {
		synced(op, f)
	}
	return f.Sync()
}

// do runs a step: step's error, if any, else the step's own.
func do(op, name string, f func() error) error {
	if step != nil {
		if err := step(op, name); err != nil {
			return err
		}
	}
	return f()
}

// tries bounds the temporary names tried when one is taken.
const tries = 10

// maxBase bounds the bytes of the target's name kept in the temporary
// file's, so that the temporary name fits in a file system's 255 bytes
// whenever the target's does.
const maxBase = 200

// tempName is a new temporary name beside name.
func tempName(name string) string {
	base := filepath.Base(name)
	if len(base) > maxBase {
		base = base[:maxBase]
		for len(base) > 0 && !utf8.ValidString(base) {
			base = base[:len(base)-1]
		}
	}
	return filepath.Join(filepath.Dir(name), "."+base+".myelin-"+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
}

func replace(d dir, name string, data []byte, perm Perm, sync Sync) error {
	var f *os.File
	var tmp string
	var err error
	for range tries {
		tmp = tempName(name)
		err = do("create", tmp, func() (err error) {
			f, err = d.create(tmp, perm.bits)
			return err
		})
		if err == nil || !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("creating a new file beside it: %w", err)
	}
	err = do("write", tmp, func() error { _, err := f.Write(data); return err })
	if err == nil && !perm.umask {
		// created under the umask, which may have narrowed it
		err = do("chmod", tmp, func() error { return f.Chmod(perm.bits) })
	}
	if err == nil && sync == Synced {
		err = do("sync", tmp, func() error { return syncFile("sync", f) })
	}
	var serr error
	if step != nil {
		serr = step("close", tmp)
	}
	cerr := f.Close() // closed whatever a test's step says
	if serr != nil {
		cerr = serr
	}
	if err == nil {
		err = cerr
	}
	if err == nil {
		err = do("rename", tmp, func() error { return d.rename(tmp, name) })
	}
	if err != nil {
		_ = d.remove(tmp) // the error to report is the step's
		return err
	}
	if sync == Unsynced {
		return nil
	}
	// Best effort: see Replace's doc.
	dirName := filepath.Dir(name)
	_ = do("syncdir", dirName, func() error {
		df, err := d.open(dirName)
		if err != nil {
			return err
		}
		defer df.Close()
		return syncFile("syncdir", df)
	})
	return nil
}
