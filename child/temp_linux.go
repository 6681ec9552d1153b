package child

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A sandboxed command's temp dir: myelin makes it, the supervisor mounts
// it writable for the command and empties it when the command ends, and
// myelin removes it (the supervisor, confined too, cannot: the directory
// is a mount in its namespace and the one holding it read-only there).
// When myelin is killed (SIGKILL, the OOM killer) the supervisor still
// empties it, but the empty directory is left; so myelin holds a shared
// flock on each temp dir it uses for as long as it uses it, and a sweep
// removes the empty ones whose lock nobody holds (sweepTemps). The kernel
// lets a lock go when its holder dies, whatever kills it: no pid is read,
// so neither a pid given again nor another pid namespace or boot sharing
// the directory is taken for the maker (nor another host, where the file
// system's locks reach across hosts, as NFS's do unless mounted nolock or
// local_lock).

// tempPrefix begins the name of a sandboxed command's temp dir. A locked
// one is tempPrefix, the maker's pid, "-" and MkdirTemp's random digits
// (the pid is for a person reading /tmp: the lock says whether it is in
// use); tempPrefix and digits alone are a dir no lock guards (made by a
// myelin before locks, or on a file system that refused one), which no
// sweep touches.
const tempPrefix = "myelin-sandbox-"

// tempDir is a sandboxed command's temp dir: path, with no link on its
// way (the supervisor mounts it), and lock, the directory itself opened
// and held with a shared flock while myelin uses it (nil where the file
// system refused a lock); sweep, unless nil, is closed when the sweep its
// making began has ended. The zero tempDir is none.
type tempDir struct {
	path  string
	lock  *os.File
	sweep chan struct{}
}

// remove removes the temp dir and what is left in it (nothing, when its
// supervisor emptied it), lets go of its lock, and waits for the sweep
// its making began (which the command's run has nearly always outlasted),
// for sweepWait at most (Kill never hangs on housekeeping): so a myelin
// that runs one command and exits has swept. It does nothing for none.
func (t tempDir) remove() {
	if t.path != "" {
		_ = os.RemoveAll(t.path)
	}
	if t.lock != nil {
		_ = t.lock.Close()
	}
	if t.sweep != nil {
		wait := time.NewTimer(sweepWait)
		defer wait.Stop()
		select {
		case <-t.sweep:
		case <-wait.C:
		}
	}
}

// sweepWait bounds how long a temp dir's removal waits for the sweep its
// making began: a sweep of 10,000 entries takes 5–9 ms here.
const sweepWait = time.Second

// errTaken says that a sweep took a temp dir just made before its maker
// locked it: the maker makes another.
var errTaken = errors.New("swept before it was locked")

// afterMkdir, unless nil, is called with each temp dir made, before it is
// locked: a test sweeps there.
var afterMkdir func(made string)

// makeTemp makes a sandboxed command's temp dir in os.TempDir(), locked,
// and sweeps that directory on a goroutine of its own when it is due
// (sweepDue): a sweep reads the whole directory (0.3 ms for 650 entries,
// 5 ms for 10,000 here), which the command's start does not wait for; its
// end does (remove). A dir a sweep took between its making and its lock
// is made again; where the file system refuses a lock, the dir is made
// under a name no sweep takes.
func makeTemp() (t tempDir, err error) {
	dir := os.TempDir()
	if sweepDue(dir, time.Now()) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			sweepTemps(dir)
		}()
		defer func() {
			if err == nil {
				t.sweep = done
			}
		}()
	}
	pattern := tempPrefix + strconv.Itoa(os.Getpid()) + "-"
	for range 5 {
		made, err := os.MkdirTemp(dir, pattern)
		if err != nil {
			return tempDir{}, err
		}
		if afterMkdir != nil {
			afterMkdir(made)
		}
		lock, err := lockTemp(made)
		if errors.Is(err, errTaken) {
			continue // swept: not ours to remove any more
		}
		if err != nil {
			// Unlockable here (a network file system's locks, say): not
			// swept either, as before locks.
			_ = os.Remove(made)
			if made, err = os.MkdirTemp(dir, tempPrefix); err != nil {
				return tempDir{}, err
			}
		}
		path, err := filepath.EvalSymlinks(made)
		if err != nil {
			tempDir{path: made, lock: lock}.remove()
			return tempDir{}, err
		}
		return tempDir{path: path, lock: lock}, nil
	}
	return tempDir{}, fmt.Errorf("every temp dir made in %s was swept before it was locked", dir)
}

// lockTemp opens the directory made, just made by MkdirTemp, and takes a
// shared flock on it: errTaken when a sweep took it first (it is gone,
// or a sweep holds its lock to remove it, or removed it between the open
// and the lock), another error when the lock was refused.
func lockTemp(made string) (*os.File, error) {
	fd, err := unix.Open(made, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errTaken
		}
		return nil, fmt.Errorf("opening %s: %w", made, err)
	}
	if err := flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
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

// flock is flock(2), again when a signal interrupted it.
func flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}

// sweepEvery is how often a process sweeps the same directory: at its
// first sandboxed command there, then at the first one after sweepEvery
// since (a myelin that runs for weeks sweeps what others left meanwhile,
// and a dir whose supervisor was still emptying it at one sweep is taken
// at the next). A var so that a test can change it.
var sweepEvery = 10 * time.Minute

// swept is when this process last swept each directory.
var swept struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// sweepDue says whether dir is to be swept now, and if so takes the sweep
// (a concurrent start does not sweep it too).
func sweepDue(dir string, now time.Time) bool {
	swept.mu.Lock()
	defer swept.mu.Unlock()
	if last, ok := swept.last[dir]; ok && now.Sub(last) < sweepEvery {
		return false
	}
	if swept.last == nil {
		swept.last = map[string]time.Time{}
	}
	swept.last[dir] = now
	return true
}

// sweepTemps removes from dir the sandboxed commands' temp dirs whose
// myelin is gone and which are empty, and returns how many it removed. It
// removes only a directory (never a link: none is followed) owned by this
// process's user, named as a locked temp dir is (sweepable), whose lock it could take at once — its maker, which holds it
// while it uses the dir, is gone — and which is still the one it locked;
// and only with rmdir, which leaves a dir that is not empty: a supervisor
// that outlived its myelin may still be emptying it. The supervisor of a
// myelin that is gone is killing its command, which may still have the
// dir (empty) as its TMPDIR when it is removed: it is being killed.
// Nothing it cannot read or remove is an error: a sweep is housekeeping.
func sweepTemps(dir string) int {
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
				if sweepable(name) && removeLeftTemp(int(dirfd), name) {
					removed++
				}
			}
		})
		if err != nil { // io.EOF at the end, or a directory unreadable
			return removed
		}
	}
}

// sweepable says whether name is a locked temp dir's: tempPrefix, digits
// (a pid), "-" and MkdirTemp's random part (not read: digits today).
func sweepable(name string) bool {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return false
	}
	pid, random, ok := strings.Cut(rest, "-")
	return ok && digits(pid) && random != ""
}

// removeLeftTemp removes the temp dir name in the directory dirfd if its
// maker is gone and it is empty (sweepTemps), and says whether it did.
func removeLeftTemp(dirfd int, name string) bool {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // a link, not a directory, gone, or not ours to read
	}
	defer unix.Close(fd)
	var held unix.Stat_t
	if unix.Fstat(fd, &held) != nil || held.Uid != uint32(os.Geteuid()) {
		return false
	}
	if flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // its myelin holds it: in use
	}
	var now unix.Stat_t
	if unix.Fstatat(dirfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != held.Dev || now.Ino != held.Ino {
		return false // replaced since it was opened
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) == nil
}

// digits says whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
