//go:build unix

package leftover

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kinds myelin has, as their packages declare them (a test of each
// package checks its own against a left one too).
func emptyDirs() *Kind { return &Kind{Prefix: "myelin-sandbox-", Dir: true} }
func fullDirs() *Kind  { return &Kind{Prefix: "myelin-mcp-", Dir: true, Full: true, Labelled: true} }
func files() *Kind     { return &Kind{Prefix: "myelin-shell-", Suffix: ".out"} }

func mkdir(t *testing.T, p string) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func write(t *testing.T, p string) string {
	t.Helper()
	if err := os.WriteFile(p, []byte("left"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func gone(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was kept (%v), want it removed", filepath.Base(p), err)
	}
}

func kept(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); err != nil {
		t.Errorf("%s was removed: %v", filepath.Base(p), err)
	}
}

// asNobody gives p to another user (as root only) and says whether it
// could.
func asNobody(t *testing.T, p string) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	if err := os.Lchown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return true
}

// A sweep of an empty-only kind removes only the empty dirs whose maker
// is gone: not one in use (its lock held: here by this process), nor one
// that is not empty, nor a link named like one (nor what it points to),
// nor one named as before locks (no lock tells whether it is in use), nor
// another user's, nor anything else in the directory.
func TestASweepRemovesOnlyTheEmptyDirsOfMakersGone(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	k := emptyDirs()
	k.due(dir, time.Now()) // taken: MakeDir's own would race this one
	inUse, err := k.MakeDir("")
	if err != nil {
		t.Fatal(err)
	}
	defer inUse.Remove()
	if name := filepath.Base(inUse.Path); !strings.HasPrefix(name, k.Prefix+strconv.Itoa(os.Getpid())+"-") || !k.Named(name) || !inUse.Locked() {
		t.Fatalf("MakeDir made %s (locked: %v), want it named after this process, as a sweep takes, and locked", inUse.Path, inUse.Locked())
	}
	left := mkdir(t, filepath.Join(dir, k.Prefix+"1-2"))
	leftToo := mkdir(t, filepath.Join(dir, k.Prefix+"99999999-12345"))
	notEmpty := mkdir(t, filepath.Join(dir, k.Prefix+"3-4"))
	write(t, filepath.Join(notEmpty, "f"))
	target := mkdir(t, filepath.Join(dir, "target"))
	link := filepath.Join(dir, k.Prefix+"5-6")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	unlocked := mkdir(t, filepath.Join(dir, k.Prefix+"1234567"))
	other := mkdir(t, filepath.Join(dir, k.Prefix+"7x-8"))
	keep := []string{notEmpty, target, link, unlocked, other, inUse.Path}
	if theirs := mkdir(t, filepath.Join(dir, k.Prefix+"9-10")); asNobody(t, theirs) {
		keep = append(keep, theirs)
	} else {
		os.Remove(theirs)
	}

	if n := k.Sweep(dir); n != 2 {
		t.Errorf("Sweep removed %d dirs, want 2", n)
	}
	gone(t, left)
	gone(t, leftToo)
	for _, p := range keep {
		kept(t, p)
	}
	kept(t, filepath.Join(notEmpty, "f"))

	inUse.Remove()
	gone(t, inUse.Path)
}

// A sweep of a Full kind removes a left dir whole, files and dirs in it
// included, but never what a link in it leads to; it keeps one in use
// (locked), one not named as a locked one, one that is a link, and
// another user's.
func TestASweepRemovesALeftServerDirWholeWithoutFollowingItsLinks(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	outside := mkdir(t, filepath.Join(t.TempDir(), "outside"))
	precious := write(t, filepath.Join(outside, "precious"))
	k := fullDirs()
	k.due(dir, time.Now())

	inUse, err := k.MakeDir("stubborn")
	if err != nil {
		t.Fatal(err)
	}
	defer inUse.Remove()
	if name := filepath.Base(inUse.Path); !strings.HasSuffix(name, ".stubborn") || !k.Named(name) || !inUse.Locked() {
		t.Fatalf("MakeDir made %s (locked %v), want it labelled, named as a sweep takes, and locked", inUse.Path, inUse.Locked())
	}
	write(t, filepath.Join(inUse.Path, "state"))

	left := mkdir(t, filepath.Join(dir, k.Prefix+"1-2.stubborn"))
	write(t, filepath.Join(left, "cache"))
	deep := left
	for i := range 5 {
		deep = mkdir(t, filepath.Join(deep, "d"+strconv.Itoa(i)))
		write(t, filepath.Join(deep, "f"))
	}
	if err := os.Symlink(outside, filepath.Join(left, "to-outside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(precious, filepath.Join(deep, "to-precious")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(left, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := mkdir(t, filepath.Join(left, "ro"))
	write(t, filepath.Join(readOnly, "f"))
	if err := os.Chmod(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(readOnly, 0o700) })

	linkToOutside := filepath.Join(dir, k.Prefix+"3-4.x")
	if err := os.Symlink(outside, linkToOutside); err != nil {
		t.Fatal(err)
	}
	old := mkdir(t, filepath.Join(dir, k.Prefix+"stubborn-123"))
	write(t, filepath.Join(old, "f"))
	oldDigits := mkdir(t, filepath.Join(dir, k.Prefix+"12-345")) // a server named "12", before locks
	keep := []string{linkToOutside, old, oldDigits, inUse.Path, filepath.Join(inUse.Path, "state"), outside, precious}
	if theirs := mkdir(t, filepath.Join(dir, k.Prefix+"5-6.theirs")); asNobody(t, theirs) {
		keep = append(keep, theirs)
	} else {
		os.Remove(theirs)
	}

	n := k.Sweep(dir)
	if os.Geteuid() == 0 { // root removes in the read-only dir too
		if n != 1 {
			t.Errorf("Sweep removed %d dirs, want 1", n)
		}
		gone(t, left)
	} else {
		// The read-only dir in it stays, and so does the left dir: all the
		// rest in it is gone.
		if got, _ := os.ReadDir(left); len(got) != 1 || got[0].Name() != "ro" {
			t.Errorf("the left dir holds %v, want only its read-only dir", got)
		}
	}
	for _, p := range keep {
		kept(t, p)
	}
	if data, err := os.ReadFile(precious); err != nil || string(data) != "left" {
		t.Errorf("the file a link in the left dir led to: %q, %v", data, err)
	}
}

// A sweep of a file kind removes the left files (unlocked) of its name and
// keeps a locked one, one named as before locks, a link named like one
// (and its target), a FIFO named like one (without opening it: it would
// block), a directory named like one, another user's, and another kind's.
func TestASweepRemovesOnlyTheFilesOfMakersGone(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	k := files()
	k.due(dir, time.Now())
	inUse, err := k.Create()
	if err != nil {
		t.Fatal(err)
	}
	defer inUse.Close()
	if name := filepath.Base(inUse.Name()); !strings.HasPrefix(name, k.Prefix+strconv.Itoa(os.Getpid())+"-") || !strings.HasSuffix(name, ".out") || !k.Named(name) {
		t.Fatalf("Create made %s, want it named after this process with its suffix, as a sweep takes", name)
	}
	if _, err := inUse.WriteString("output"); err != nil {
		t.Fatal(err)
	}
	left := write(t, filepath.Join(dir, k.Prefix+"1-2.out"))
	target := write(t, filepath.Join(dir, "target"))
	link := filepath.Join(dir, k.Prefix+"3-4.out")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, k.Prefix+"5-6.out")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	keep := []string{
		inUse.Name(), target, link, fifo,
		write(t, filepath.Join(dir, k.Prefix+"123.out")),
		mkdir(t, filepath.Join(dir, k.Prefix+"7-8.out")),
		write(t, filepath.Join(dir, k.Prefix+"9-10.txt")),
		write(t, filepath.Join(dir, "myelin-other-1-2.out")),
	}
	if theirs := write(t, filepath.Join(dir, k.Prefix+"11-12.out")); asNobody(t, theirs) {
		keep = append(keep, theirs)
	} else {
		os.Remove(theirs)
	}
	if n := sweepUnhung(t, k, dir); n != 1 {
		t.Errorf("Sweep removed %d files, want 1", n)
	}
	gone(t, left)
	for _, p := range keep {
		kept(t, p)
	}

	inUse.Close() // its maker gone: the lock with it
	if n := k.Sweep(dir); n != 1 {
		t.Errorf("a sweep after the file's lock was let go removed %d, want 1", n)
	}
	gone(t, inUse.Name())
}

// A file's lock is held by the file Create returns, and by a process that
// inherits it, after this process lets go of its own: a command writing
// its output keeps it.
func TestAFileIsKeptWhileAChildHoldsItOpen(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	k := files()
	k.due(dir, time.Now())
	f, err := k.Create()
	if err != nil {
		t.Fatal(err)
	}
	dup, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := k.Sweep(dir); n != 0 {
		t.Errorf("a sweep removed %d with the file still open elsewhere, want 0", n)
	}
	kept(t, f.Name())
	unix.Close(dup)
	if n := k.Sweep(dir); n != 1 {
		t.Errorf("a sweep removed %d once nobody held the file, want 1", n)
	}
}

// An entry a sweep removed between its making and its lock is made again:
// the maker gets one that is there and locked. Per kind.
func TestAnEntrySweptBeforeItWasLockedIsMadeAgain(t *testing.T) {
	for _, k := range []*Kind{emptyDirs(), fullDirs(), files()} {
		t.Run(k.Prefix, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("TMPDIR", dir)
			k.due(dir, time.Now()) // taken: only the hook sweeps
			var taken []string
			afterMake = func(made string) {
				if len(taken) == 0 {
					taken = append(taken, made)
					k.Sweep(dir)
				}
			}
			defer func() { afterMake = nil }()
			path, _ := makeOf(t, k)
			if len(taken) != 1 {
				t.Fatal("the hook swept nothing")
			}
			gone(t, taken[0])
			if path == taken[0] {
				t.Fatalf("made %s again, want another", path)
			}
			kept(t, path)
			if n := k.Sweep(dir); n != 0 {
				t.Errorf("a sweep removed %d with the entry made again locked, want 0", n)
			}
		})
	}
}

// A sweep that holds a just-made entry's lock (exclusive) when its maker
// locks it: the maker takes it for swept (errTaken) and makes another,
// under the swept name pattern; it does not fall back to the name no
// sweep touches, as it would if the refusal were taken for a file system
// that refuses locks. Per kind.
func TestAMakerThatFindsASweepHoldingItsLockMakesAnother(t *testing.T) {
	for _, k := range []*Kind{emptyDirs(), fullDirs(), files()} {
		t.Run(k.Prefix, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("TMPDIR", dir)
			k.due(dir, time.Now())
			var taken string
			held := -1
			afterMake = func(made string) {
				if taken != "" {
					return
				}
				taken = made
				fd, err := unix.Open(made, unix.O_RDONLY, 0)
				if err != nil {
					t.Error(err)
					return
				}
				if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
					t.Error(err)
				}
				held = fd
			}
			t.Cleanup(func() { afterMake = nil })
			path, locked := makeOf(t, k)
			if held >= 0 {
				unix.Close(held)
			}
			if taken == "" {
				t.Fatal("the maker made nothing through afterMake")
			}
			if path == taken || !locked || !k.Named(filepath.Base(path)) {
				t.Fatalf("the maker took %s (locked %v; swept name %v), the entry a sweep held being %s", path, locked, k.Named(filepath.Base(path)), taken)
			}
		})
	}
}

// A FIFO named like a temp dir does not hang a sweep (it is opened
// O_DIRECTORY, which refuses it at once) and is not removed.
func TestASweepPassesAFIFONamedLikeADir(t *testing.T) {
	for _, k := range []*Kind{emptyDirs(), fullDirs()} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, k.Prefix+"1-2.x")
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		if n := sweepUnhung(t, k, dir); n != 0 {
			t.Errorf("the sweep removed %d entries; want none", n)
		}
		kept(t, fifo)
	}
}

// A process sweeps a directory at its first entry there, then again only
// once sweepEvery has passed since; each kind on its own schedule.
func TestADirectoryIsSweptAtFirstThenOnlyOnceSweepEveryHasPassed(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	k := files()
	for _, step := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {0, false}, {sweepEvery - time.Second, false}, {sweepEvery, true}, {sweepEvery + time.Second, false}} {
		if got := k.due(dir, now.Add(step.at)); got != step.want {
			t.Errorf("due at +%v = %v, want %v", step.at, got, step.want)
		}
	}
	if !k.due(filepath.Join(dir, "other"), now) {
		t.Error("another directory was not due at its first entry")
	}
	if !emptyDirs().due(dir, now) {
		t.Error("another kind was not due at its first entry in the directory")
	}
}

// The making of an entry sweeps its directory when due: a left one is
// gone once the sweep it began has ended (Wait), and a Dir's Remove waits
// for it.
func TestMakingAnEntrySweepsTheLeftOnesOfItsKind(t *testing.T) {
	for _, k := range []*Kind{emptyDirs(), fullDirs(), files()} {
		t.Run(k.Prefix, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("TMPDIR", dir)
			var left string
			if k.Dir {
				name := k.Prefix + "1-2"
				if k.Labelled {
					name += ".x"
				}
				left = mkdir(t, filepath.Join(dir, name))
				if k.Full {
					write(t, filepath.Join(left, "f"))
				}
				d, err := k.MakeDir("x")
				if err != nil {
					t.Fatal(err)
				}
				d.Remove()
				gone(t, d.Path)
			} else {
				left = write(t, filepath.Join(dir, k.Prefix+"1-2"+k.Suffix))
				f, err := k.Create()
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				k.Wait()
			}
			gone(t, left)
		})
	}
}

// Names: what each kind takes for a locked entry of its own.
func TestNamedTakesOnlyLockedNamesOfItsKind(t *testing.T) {
	for _, c := range []struct {
		k    *Kind
		name string
		want bool
	}{
		{emptyDirs(), "myelin-sandbox-12-345", true},
		{emptyDirs(), "myelin-sandbox-345", false}, // before locks
		{emptyDirs(), "myelin-sandbox-1x-345", false},
		{emptyDirs(), "myelin-sandbox-12-", false},
		{fullDirs(), "myelin-mcp-12-345.srv", true},
		{fullDirs(), "myelin-mcp-12-345.", true},
		{fullDirs(), "myelin-mcp-12-345", false},    // a server "12" before locks
		{fullDirs(), "myelin-mcp-srv-345", false},   // before locks
		{fullDirs(), "myelin-mcp-12-3-4.srv", true}, // random part as MkdirTemp may give
		{fullDirs(), "myelin-mcp-text-1-2.txt", false},
		{files(), "myelin-shell-12-345.out", true},
		{files(), "myelin-shell-345.out", false},
		{files(), "myelin-shell-12-345.txt", false},
		{files(), "myelin-shell-12-.out", false},
	} {
		if got := c.k.Named(c.name); got != c.want {
			t.Errorf("%q.Named(%q) = %v, want %v", c.k.Prefix, c.name, got, c.want)
		}
	}
}

// A label that would put the dir elsewhere (a "/") or change the name's
// pattern (a "*") is refused.
func TestMakeDirRefusesALabelWithASlashOrAStar(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, label := range []string{"a/b", "../x", "a*b"} {
		if d, err := fullDirs().MakeDir(label); err == nil {
			d.Remove()
			t.Errorf("MakeDir(%q) made %s, want an error", label, d.Path)
		}
	}
}

// sweepUnhung is k.Sweep(dir), failing t if it has not returned within
// ten seconds (a hang guard, not a measure: a FIFO named like an entry
// must not block it).
func sweepUnhung(t *testing.T, k *Kind, dir string) int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- k.Sweep(dir) }()
	select {
	case n := <-done:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("a sweep of %s hangs (on a FIFO named like an entry?)", dir)
		return 0
	}
}

// makeOf makes an entry of k (a Dir kind's labelled "x"), let go of at
// the test's end (Remove, or its file closed), and returns its path and
// whether it is locked (a file made by Create always is).
func makeOf(t *testing.T, k *Kind) (path string, locked bool) {
	t.Helper()
	if k.Dir {
		d, err := k.MakeDir("x")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Remove)
		return d.Path, d.Locked()
	}
	f, err := k.Create()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f.Name(), true
}
