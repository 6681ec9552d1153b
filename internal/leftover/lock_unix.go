//go:build unix

package leftover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// MakeDir makes a new directory of k (k.Dir) in os.TempDir(), mode 0700,
// locked (a shared flock held until Remove), its name ending in "." and
// label when k is Labelled (label must not hold "/" or "*"). It sweeps that
// directory for k on a goroutine of its own when due, which the making
// does not wait for; Remove does. A directory a sweep took between its
// making and its lock is made again; where the file system refuses a
// lock, the directory is made under a name no sweep takes.
func (k *Kind) MakeDir(label string) (d Dir, err error) {
	if strings.ContainsAny(label, "/*") {
		return Dir{}, fmt.Errorf("the temp dir label %q holds a / or a *", label)
	}
	dir := os.TempDir()
	if done := k.sweepIfDue(dir); done != nil {
		defer func() {
			if err == nil {
				d.sweep = done
			}
		}()
	}
	for range 5 {
		made, err := os.MkdirTemp(dir, k.pattern(label))
		if err != nil {
			return Dir{}, err
		}
		if afterMake != nil {
			afterMake(made)
		}
		lock, err := lockDir(made)
		if errors.Is(err, errTaken) {
			continue // swept: not ours to remove any more
		}
		if err != nil {
			// Unlockable here (a network file system's locks, say): not
			// swept either, as before locks.
			_ = os.Remove(made)
			if made, err = os.MkdirTemp(dir, k.unlockedPattern(label)); err != nil {
				return Dir{}, err
			}
		}
		path, err := filepath.EvalSymlinks(made)
		if err != nil {
			Dir{Path: made, lock: lock}.Remove()
			return Dir{}, fmt.Errorf("resolving the temp dir %s: %w", made, err)
		}
		return Dir{Path: path, lock: lock}, nil
	}
	return Dir{}, fmt.Errorf("every temp dir made in %s was swept before it was locked", dir)
}

// lockDir opens the directory made, just made by MkdirTemp, and takes a
// shared flock on it: errTaken when a sweep took it first (it is gone, or
// a sweep holds its lock to remove it, or removed it between the open and
// the lock), another error when the lock was refused.
func lockDir(made string) (*os.File, error) {
	fd, err := unix.Open(made, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errTaken
		}
		return nil, fmt.Errorf("opening %s: %w", made, err)
	}
	return lockFd(fd, made, unix.LOCK_SH)
}

// lockFd takes the flock how (with LOCK_NB) on fd, the entry just made at
// made, and checks made is still that entry: errTaken when a sweep holds
// it or took it, another error when the lock was refused. fd is closed on
// an error.
func lockFd(fd int, made string, how int) (*os.File, error) {
	if err := localFS(fd); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("locking %s: %w", made, err)
	}
	if err := flock(fd, how|unix.LOCK_NB); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errTaken
		}
		return nil, fmt.Errorf("locking %s: %w", made, err)
	}
	var held, now unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Lstat(made, &now) != nil || held.Dev != now.Dev || held.Ino != now.Ino {
		_ = unix.Close(fd)
		return nil, errTaken
	}
	return os.NewFile(uintptr(fd), made), nil
}

// Create creates a new file of k (not k.Dir) in os.TempDir(), mode 0600,
// open for reading and writing, and holds an exclusive flock on it through
// the file returned: for as long as that file is open, or any process
// that inherits it (a command writing its output) runs. It sweeps that
// directory for k on a goroutine of its own when due. A file a sweep took
// between its creation and its lock is created again; where the file
// system refuses a lock, it is created under a name no sweep takes.
func (k *Kind) Create() (*os.File, error) {
	dir := os.TempDir()
	k.sweepIfDue(dir)
	for range 5 {
		f, err := os.CreateTemp(dir, k.pattern(""))
		if err != nil {
			return nil, err
		}
		if afterMake != nil {
			afterMake(f.Name())
		}
		// close-on-exec as it is made: a command started meanwhile on
		// another goroutine must not inherit it (another's output, and its
		// lock)
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		lock, err := lockFd(fd, f.Name(), unix.LOCK_EX)
		if err == nil {
			_ = f.Close() // the lock is the open file description's: lock holds it still
			return lock, nil
		}
		if errors.Is(err, errTaken) {
			_ = f.Close()
			continue // swept: not ours to remove any more
		}
		_ = os.Remove(f.Name())
		_ = f.Close()
		return os.CreateTemp(dir, k.unlockedPattern(""))
	}
	return nil, fmt.Errorf("every temp file made in %s was swept before it was locked", dir)
}

// flock is flock(2), again when a signal interrupted it.
func flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}

// Sweep removes from dir the entries of k whose maker is gone, and returns
// how many it removed. It removes only an entry named as a locked one of
// k is (Named), of the kind k makes (a directory, never a link, for a
// Dir kind; a regular file otherwise), owned by this process's user,
// whose lock it could take at once (its maker, which holds it while the
// entry is in use, is gone), and which is still the entry it locked: a
// directory with rmdir, or, for a Full kind, whole (removeAll); a file
// with unlink. Nothing it cannot read or remove is an error: a sweep is
// housekeeping, and what it leaves the next one tries again.
func (k *Kind) Sweep(dir string) int {
	d, err := os.Open(dir)
	if err != nil {
		return 0
	}
	defer d.Close()
	conn, err := d.SyscallConn()
	if err != nil {
		return 0
	}
	removed := 0
	for {
		names, err := d.Readdirnames(256)
		_ = conn.Control(func(dirfd uintptr) {
			for _, name := range names {
				if k.Named(name) && k.removeLeft(int(dirfd), name) {
					removed++
				}
			}
		})
		if err != nil { // io.EOF at the end, or a directory unreadable
			return removed
		}
	}
}

// removeLeft removes the entry name of k in the directory dirfd if its
// maker is gone (Sweep), and says whether it did.
func (k *Kind) removeLeft(dirfd int, name string) bool {
	var fd int
	var err error
	if k.Dir {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	} else {
		// Only a regular file is opened: a FIFO or a device named like one
		// is never opened at all (its open could block or act).
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return false
		}
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return false // a link, not of its kind, gone, or not ours to read
	}
	defer unix.Close(fd)
	var held unix.Stat_t
	if unix.Fstat(fd, &held) != nil || held.Uid != uint32(os.Geteuid()) {
		return false
	}
	if !k.Dir && held.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	if flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // its maker holds it: in use
	}
	var now unix.Stat_t
	if unix.Fstatat(dirfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != held.Dev || now.Ino != held.Ino {
		return false // replaced since it was opened
	}
	if !k.Dir {
		return unix.Unlinkat(dirfd, name, 0) == nil
	}
	if k.Full {
		var parent unix.Stat_t
		if unix.Fstat(dirfd, &parent) != nil || mountPoint(dirfd, name, uint64(held.Dev), uint64(parent.Dev)) {
			return false // a mount point: what is mounted there is not ours to empty
		}
		emptyAt(fd, uint64(held.Dev), maxDepth)
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) == nil
}

// maxDepth bounds how deep a left directory's contents are removed (and
// how many descriptors that holds open); what is deeper stays, and so does
// the directory.
const maxDepth = 64

// emptyAt removes what the directory open as fd, on device dev, holds,
// depth levels deep at most, never following a link nor entering a mount
// point (left as it is, with what is mounted there): every name is removed relative to the descriptor of the
// directory that holds it, and a directory is entered only by opening it
// O_NOFOLLOW|O_DIRECTORY there, and only when it is no mount point
// (mountPoint: a bind mount of the same file system too, on Linux) (a link swapped in is refused, and
// unlinkat removes a link itself, never what it leads to). A directory
// that something of the same user renames out of the tree while it is
// emptied is emptied where it went, as rm -r would; no other user can
// reach a left directory (0700, and its owner checked). Names are read
// 256 at a time, so a huge directory costs no more memory. What it cannot
// remove stays.
func emptyAt(fd int, dev uint64, depth int) {
	for range 8 { // again while a pass removes something: names read as others go may be missed
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			return
		}
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return
		}
		d := os.NewFile(uintptr(dup), "")
		removed := 0
		for {
			names, err := d.Readdirnames(256)
			for _, name := range names {
				if removeAt(fd, name, dev, depth) {
					removed++
				}
			}
			if err != nil {
				break
			}
		}
		_ = d.Close()
		if removed == 0 {
			return
		}
	}
}

// removeAt removes name, and what it holds when it is a directory (depth
// levels deep at most), from the directory open as fd (emptyAt), and says
// whether it did.
func removeAt(fd int, name string, dev uint64, depth int) bool {
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || mountPoint(fd, name, uint64(st.Dev), dev) {
		return false // gone, or a mount point
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(fd, name, 0) == nil
	}
	if depth > 0 {
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		var in unix.Stat_t
		if unix.Fstat(sub, &in) != nil || in.Dev != st.Dev || in.Ino != st.Ino || mountPoint(fd, name, uint64(in.Dev), dev) {
			_ = unix.Close(sub) // replaced since its stat, or mounted on
			return false
		}
		emptyAt(sub, dev, depth-1)
		_ = unix.Close(sub)
	}
	return unix.Unlinkat(fd, name, unix.AT_REMOVEDIR) == nil
}
