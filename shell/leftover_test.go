//go:build unix

package shell

// An output file made in $TMPDIR (no workspace directory, or a read-only
// one) that a killed myelin left is removed when the next one is made;
// one in use is kept, by myelin's lock or its command's.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func writeFile(t *testing.T, p string) string {
	t.Helper()
	if err := os.WriteFile(p, []byte("output"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A left output file in $TMPDIR (its lock let go) is removed when the next
// one is made there; one a live myelin locks, a link named like one (and
// its target), one named as before locks, and another user's are kept.
func TestALeftOutputFileInTheTempDirIsRemovedWhenTheNextIsMade(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	left := writeFile(t, filepath.Join(tmp, "myelin-shell-1-2.out"))
	inUse := writeFile(t, filepath.Join(tmp, "myelin-shell-3-4.out"))
	fd, err := unix.Open(inUse, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	target := writeFile(t, filepath.Join(t.TempDir(), "target"))
	link := filepath.Join(tmp, "myelin-shell-5-6.out")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	keep := []string{inUse, link, target, writeFile(t, filepath.Join(tmp, "myelin-shell-123.out"))}
	if theirs := writeFile(t, filepath.Join(tmp, "myelin-shell-7-8.out")); os.Geteuid() == 0 {
		if err := os.Lchown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, theirs)
	}

	f, err := outputFile("")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	tempOutputs.Wait()
	if _, err := os.Lstat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the left output file was kept (%v)", err)
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if filepath.Dir(f.Name()) != tmp || !tempOutputs.Named(filepath.Base(f.Name())) {
		t.Errorf("the output file is %s, want one of the swept kind in %s", f.Name(), tmp)
	}
}

// An output file in $TMPDIR is kept while its command runs, after myelin
// let go of it (killed): the command inherits its lock. Once the command
// has ended too, a sweep removes it.
func TestAnOutputFileInTheTempDirIsKeptWhileItsCommandRuns(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	f, err := outputFile("")
	if err != nil {
		t.Fatal(err)
	}
	name := f.Name()
	cmd := exec.Command("sleep", "60")
	cmd.Stdout = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	f.Close() // myelin's hold, let go as a kill lets it go
	tempOutputs.Wait()
	if n := tempOutputs.Sweep(tmp); n != 0 {
		t.Errorf("a sweep while the command ran removed %d, want its output kept", n)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := tempOutputs.Sweep(tmp); n != 1 {
		t.Errorf("a sweep once the command ended removed %d, want its output", n)
	}
	if _, err := os.Lstat(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the output file was kept (%v)", err)
	}
}

// A command run with no workspace directory writes its output to a file
// of the swept kind in $TMPDIR, and leaves nothing there once its result
// is converted.
func TestACommandWithoutAWorkspaceLeavesNothingInTheTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	text, failed := run(t, "", "readlink /proc/$$/fd/1", 0)
	if failed {
		t.Fatalf("the command failed: %s", text)
	}
	got := filepath.Base(strings.TrimSpace(text))
	if !tempOutputs.Named(got) {
		t.Errorf("the command wrote to %q, want a file of the swept kind", got)
	}
	tempOutputs.Wait()
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("after the command %s holds %v, want nothing", tmp, entries)
	}
}
