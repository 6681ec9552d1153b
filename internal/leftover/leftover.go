// Package leftover owns the temporary files and directories myelin makes in
// the OS's temp dir (os.TempDir()) and what becomes of those a killed
// myelin leaves there. Each one is locked (flock) by the process that
// made it for as long as it is in use; the kernel lets a lock go when its
// holder dies, however it dies (SIGKILL, the OOM killer). A sweep, run by
// the next use of the same kind, removes the entries of that kind whose
// lock nobody holds, of this process's user, never following a link.
//
// A Kind says which names are its own and how a left one is removed: a
// directory that is only ever empty when left (a sandboxed command's,
// whose supervisor empties it) with rmdir alone; a directory that may hold
// files (a stdio MCP server's working directory) whole, its contents
// removed relative to the directory's own descriptor; a file with unlink.
// No pid is read: a pid given again or another pid namespace sharing the
// directory is never taken for an entry's maker. Entries are locked, and
// so swept, only on local file systems whose locks every process sharing
// them sees (localFS): on a network file system a lock may not reach
// another host, and entries there take names no sweep takes. The pid in
// a name is for a person reading /tmp.
//
// The package must not remove anything that is not named as a locked entry
// of the kind swept (names made before locks, or on a file system that
// refused one, are never swept), nor anything whose lock is held, nor
// another user's, nor what a link leads to. It does not decide where its
// callers' other files go (a workspace's own outputs are package shell's).
package leftover

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind is one kind of temporary entry: the names it makes and sweeps, and
// how a left one is removed. A Kind is used through a pointer and is safe
// for concurrent use; its fields are set once, before its first use.
type Kind struct {
	// Prefix begins every name, e.g. "myelin-sandbox-". A locked entry is
	// Prefix, the maker's pid, "-", the random part MkdirTemp or
	// CreateTemp gives, then "." and the label (Labelled) or Suffix; an
	// entry no lock guards is Prefix and the random part alone (no pid),
	// which no sweep takes.
	Prefix string
	// Suffix ends every file's name, e.g. ".out"; a directory's is "".
	Suffix string
	// Dir says the entries are directories, not regular files.
	Dir bool
	// Full says a left directory may hold files (a server wrote them): a
	// sweep removes it whole, never following a link in it. Otherwise a
	// sweep removes only an empty one (rmdir).
	Full bool
	// Labelled says names end in "." and a label MakeDir is given (a
	// server's name, for a person reading /tmp); the "." tells them from
	// names made before locks, which have none.
	Labelled bool

	mu     sync.Mutex
	last   map[string]time.Time // when this process last swept each directory
	sweeps sync.WaitGroup       // sweeps running on goroutines of their own
}

// sweepEvery is how often a process sweeps the same directory for the same
// kind: at its first entry of that kind there, then at the first one made
// sweepEvery or more after the last sweep (no timer: a process that makes
// no more entries sweeps no more). A var so that a test can change it.
var sweepEvery = 10 * time.Minute

// sweepWait bounds how long a directory's removal waits for the sweep its
// making began: a sweep of 10,000 entries takes 5–9 ms here.
const sweepWait = time.Second

// errTaken says that a sweep took an entry just made before its maker
// locked it: the maker makes another.
var errTaken = errors.New("swept before it was locked")

// afterMake, unless nil, is called with each entry made, before it is
// locked: a test sweeps there.
var afterMake func(made string)

// due says whether dir is to be swept for k now, and if so takes the
// sweep (a concurrent maker does not sweep it too).
func (k *Kind) due(dir string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if last, ok := k.last[dir]; ok && now.Sub(last) < sweepEvery {
		return false
	}
	if k.last == nil {
		k.last = map[string]time.Time{}
	}
	k.last[dir] = now
	return true
}

// sweepIfDue sweeps dir for k on a goroutine when it is due, and returns a
// channel closed when that sweep has ended (nil when none began).
func (k *Kind) sweepIfDue(dir string) chan struct{} {
	if !k.due(dir, time.Now()) {
		return nil
	}
	done := make(chan struct{})
	k.sweeps.Add(1)
	go func() {
		defer k.sweeps.Done()
		defer close(done)
		k.Sweep(dir)
	}()
	return done
}

// Wait waits for the sweeps of k this process has begun: a test's, or a
// short-lived process's that would see its sweep end before it exits.
func (k *Kind) Wait() { k.sweeps.Wait() }

// pattern is the MkdirTemp or CreateTemp pattern of a locked entry of k.
func (k *Kind) pattern(label string) string {
	p := k.Prefix + strconv.Itoa(os.Getpid()) + "-*"
	if k.Labelled {
		p += "." + label
	}
	return p + k.Suffix
}

// unlockedPattern is the pattern of an entry no lock guards: no pid, so
// that no sweep takes it.
func (k *Kind) unlockedPattern(label string) string {
	p := k.Prefix + "*"
	if k.Labelled {
		p += "." + label
	}
	return p + k.Suffix
}

// Named says whether name is a locked entry's of k: Prefix, digits (a
// pid), "-", a random part without "." and then "." and a label
// (Labelled) or Suffix.
func (k *Kind) Named(name string) bool {
	rest, ok := strings.CutPrefix(name, k.Prefix)
	if !ok {
		return false
	}
	if !k.Labelled {
		if rest, ok = strings.CutSuffix(rest, k.Suffix); !ok {
			return false
		}
	}
	pid, random, ok := strings.Cut(rest, "-")
	if !ok || !digits(pid) {
		return false
	}
	if k.Labelled {
		var label string
		random, label, ok = strings.Cut(random, ".")
		if !ok || strings.Contains(label, "/") {
			return false
		}
	}
	return random != "" && !strings.ContainsAny(random, "./")
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

// Dir is a temp dir MakeDir made: Path, with no link on its way, and its
// lock, the directory itself opened and held with a shared flock while it
// is in use (nil where the file system refused a lock). The zero Dir is
// none.
type Dir struct {
	// Path is the directory's path, symbolic links resolved.
	Path  string
	lock  *os.File
	sweep chan struct{} // closed when the sweep its making began has ended
}

// Locked says whether the directory is held by a lock (a sweep would take
// it once let go), not made under the name no sweep takes.
func (d Dir) Locked() bool { return d.lock != nil }

// Remove removes the directory and all in it, lets go of its lock, and
// waits for the sweep its making began (nearly always long over), for
// sweepWait at most (a caller never hangs on housekeeping): so a myelin
// that makes one and exits has swept. It does nothing for none.
func (d Dir) Remove() {
	if d.Path != "" {
		_ = os.RemoveAll(d.Path)
	}
	if d.lock != nil {
		_ = d.lock.Close()
	}
	if d.sweep != nil {
		wait := time.NewTimer(sweepWait)
		defer wait.Stop()
		select {
		case <-d.sweep:
		case <-wait.C:
		}
	}
}
