package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// syncData syncs f's data to disk, and of its metadata what reading the
// data back needs (its size), not its times: fdatasync, what SQLite uses
// where the system has it. The log is written in place once it has grown
// (a checkpoint starts it over from its beginning), so most syncs change
// no metadata a read needs.
// fd is f's descriptor, taken once (os.File.Fd costs two fcntl calls).
func syncData(_ *os.File, fd uintptr) error {
	for {
		err := syscall.Fdatasync(int(fd))
		if err != syscall.EINTR {
			return err
		}
	}
}

// fileID is which file a name leads to: its device and inode.
type fileID struct{ dev, ino uint64 }

// same reports whether a and b are the same file.
func (a fileID) same(b fileID) bool { return a != fileID{} && a == b }

// fileAt is the file at path, looked at without asking for its times
// (statx of its inode number alone). A stat that reads a file's times
// marks them as read, and the next write to the file then stamps it with
// a fine-grained time (Linux's multigrain timestamps, 6.13 and later):
// the inode is dirtied on that write, and the log's next fdatasync cost
// ~100 µs more on this machine's ext4 (a scratch program: 12 frame writes
// and an fdatasync a round, medians of 172–271 µs a sync without a stat
// between rounds, 181–251 µs with this one, 284–352 µs with os.Stat;
// docs/performance.md, issue 34).
//
// Where statx fails other than for a name with nothing there (a kernel
// before 4.11 has none; a seccomp filter may refuse it), or gives no
// inode number, it is the whole stat, as before.
func fileAt(path string) (fileID, error) {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, unix.AT_STATX_SYNC_AS_STAT, unix.STATX_INO, &st)
	if errors.Is(err, unix.ENOENT) {
		return fileID{}, &fs.PathError{Op: "statx", Path: path, Err: err}
	}
	if err != nil || st.Mask&unix.STATX_INO == 0 {
		fi, err := os.Stat(path)
		if err != nil {
			return fileID{}, err
		}
		return idOf(fi)
	}
	return fileID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino}, nil
}

// fileOf is the file f has open, looked at as fileAt looks (statx of its
// inode number), so that the two compare alike.
func fileOf(f *os.File) (fileID, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return fileID{}, err
	}
	var st unix.Statx_t
	var statErr error
	if err := rc.Control(func(fd uintptr) {
		statErr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_INO, &st)
	}); err != nil {
		return fileID{}, err
	}
	if statErr != nil || st.Mask&unix.STATX_INO == 0 {
		fi, err := f.Stat()
		if err != nil {
			return fileID{}, err
		}
		return idOf(fi)
	}
	return fileID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino}, nil
}

// idOf is the file fi describes.
func idOf(fi os.FileInfo) (fileID, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("%s: no device and inode in its stat (%T)", fi.Name(), fi.Sys())
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}
