//go:build unix

package mcp

// What a killed myelin leaves in $TMPDIR of package mcp's making — a
// stdio server's directory of its own, a large reply's text file — is
// removed by the next use of its kind, and nothing else is.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/myelin-run/myelin/mcp/mcptest"
)

// holdLock opens p and holds a flock (how) on it until the test ends: a
// live myelin's entry.
func holdLock(t *testing.T, p string, how int) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Flock(fd, how|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, p string) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustWrite(t *testing.T, p string) string {
	t.Helper()
	if err := os.WriteFile(p, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// othersOwn gives p to another user when this test runs as root, and says
// whether it did; otherwise it removes p.
func othersOwn(t *testing.T, p string) bool {
	t.Helper()
	if os.Geteuid() == 0 {
		if err := os.Lchown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		return true
	}
	os.RemoveAll(p)
	return false
}

func checkGone(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was kept (%v), want it removed", filepath.Base(p), err)
	}
}

func checkKept(t *testing.T, ps ...string) {
	t.Helper()
	for _, p := range ps {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// A stdio server's directory of its own that a killed myelin left (its
// lock let go; the server wrote files in it, a directory among them) is
// removed whole when the next server without "cwd" starts; one a live
// myelin holds, a link named like one (and what it and a link inside the
// left one lead to), one named as before locks, and another user's are
// kept. The new server's own is locked while it runs and removed after.
func TestALeftServerDirIsRemovedWholeAtTheNextServersStart(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	outside := mustMkdir(t, filepath.Join(t.TempDir(), "outside"))
	precious := mustWrite(t, filepath.Join(outside, "precious"))

	left := mustMkdir(t, filepath.Join(tmp, "myelin-mcp-1-2.gone"))
	mustWrite(t, filepath.Join(left, "cache.db"))
	mustWrite(t, filepath.Join(mustMkdir(t, filepath.Join(left, "sub")), "f"))
	if err := os.Symlink(outside, filepath.Join(left, "sub", "out")); err != nil {
		t.Fatal(err)
	}
	inUse := mustMkdir(t, filepath.Join(tmp, "myelin-mcp-3-4.busy"))
	mustWrite(t, filepath.Join(inUse, "state"))
	holdLock(t, inUse, unix.LOCK_SH)
	link := filepath.Join(tmp, "myelin-mcp-5-6.link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	old := mustMkdir(t, filepath.Join(tmp, "myelin-mcp-stubborn-123"))
	mustWrite(t, filepath.Join(old, "f"))
	keep := []string{filepath.Join(inUse, "state"), link, filepath.Join(old, "f"), precious}
	if theirs := mustMkdir(t, filepath.Join(tmp, "myelin-mcp-7-8.theirs")); othersOwn(t, theirs) {
		keep = append(keep, theirs)
	}

	cmd, env := mcptest.Command()
	h := start(t, []Server{{Name: "s", Type: "stdio", Command: cmd, Env: env}}, Options{})
	if f := h.set.Failures(); f != nil {
		t.Fatalf("the server did not start: %v", f)
	}
	serverDirs.Wait()
	checkGone(t, left)
	checkKept(t, keep...)

	dir := h.call("s--cwd", `{}`).Text
	if filepath.Dir(dir) != tmp || !serverDirs.Named(filepath.Base(dir)) {
		t.Fatalf("the server runs in %s, want a dir of the swept kind in %s", dir, tmp)
	}
	if n := serverDirs.Sweep(tmp); n != 0 {
		t.Errorf("a sweep while the server ran removed %d dirs, want its dir kept", n)
	}
	checkKept(t, dir)
	h.set.Close()
	checkGone(t, dir)
}

// The file a large reply's text goes to is locked while it is in use, and
// one a killed myelin left (its lock let go) is removed when the next one
// is made; a locked one, a link named like one (and its target), one
// named as before locks, and another user's are kept.
func TestALeftReplyTextFileIsRemovedWhenTheNextIsMade(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	target := mustWrite(t, filepath.Join(t.TempDir(), "target"))
	left := mustWrite(t, filepath.Join(tmp, "myelin-mcp-text-1-2.txt"))
	inUse := mustWrite(t, filepath.Join(tmp, "myelin-mcp-text-3-4.txt"))
	holdLock(t, inUse, unix.LOCK_EX)
	link := filepath.Join(tmp, "myelin-mcp-text-5-6.txt")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	keep := []string{inUse, link, target, mustWrite(t, filepath.Join(tmp, "myelin-mcp-text-123.txt"))}
	if theirs := mustWrite(t, filepath.Join(tmp, "myelin-mcp-text-7-8.txt")); othersOwn(t, theirs) {
		keep = append(keep, theirs)
	}

	r := &spooledResult{plain: true}
	if err := r.write([]byte("text")); err != nil {
		t.Fatal(err)
	}
	textFiles.Wait()
	checkGone(t, left)
	checkKept(t, keep...)

	made := r.text.Name()
	if filepath.Dir(made) != tmp || !textFiles.Named(filepath.Base(made)) {
		t.Fatalf("the text went to %s, want a file of the swept kind in %s", made, tmp)
	}
	if n := textFiles.Sweep(tmp); n != 0 {
		t.Errorf("a sweep with the text file in use removed %d, want 0", n)
	}
	r.text.Close() // as a killed myelin's lock goes
	if n := textFiles.Sweep(tmp); n != 1 {
		t.Errorf("a sweep once the text file's lock was let go removed %d, want 1", n)
	}
	checkGone(t, made)
}

// A large text reply goes through a text file of the swept kind in
// $TMPDIR and leaves nothing there once converted: the spill file is that
// file, moved into the workspace.
func TestALargeReplyLeavesNothingInTheTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	h := start(t, []Server{testServer("t")}, Options{})
	if f := h.set.Failures(); f != nil {
		t.Fatal(f)
	}
	if out := h.call("t--big", `{"mib":2}`); out.SpillPath == "" {
		t.Fatalf("no spill file: %.300q", out.Text)
	}
	textFiles.Wait()
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if !serverDirs.Named(e.Name()) { // the server's own dir, while it runs
			t.Errorf("after the reply %s holds %s", tmp, e.Name())
		}
	}
	h.set.Close()
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("after the server closed %s holds %v, want nothing", tmp, entries)
	}
}
