package wholefile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// how is one of the ways in: a path, or a name inside an os.Root of the
// directory, synced or not.
type how struct {
	name    string
	sync    Sync
	replace func(t *testing.T, dir, name string, data []byte, perm Perm) error
}

// replaceIn is ReplaceIn of name in an os.Root of dir.
func replaceIn(sync Sync) func(t *testing.T, dir, name string, data []byte, perm Perm) error {
	return func(t *testing.T, dir, name string, data []byte, perm Perm) error {
		r, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return ReplaceIn(r, name, data, perm, sync)
	}
}

var hows = []how{
	{"Replace", Synced, func(t *testing.T, dir, name string, data []byte, perm Perm) error {
		return Replace(filepath.Join(dir, name), data, perm)
	}},
	{"ReplaceIn/synced", Synced, replaceIn(Synced)},
	{"ReplaceIn/unsynced", Unsynced, replaceIn(Unsynced)},
}

// entries is the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

const oldContent = `{"old":"a much longer content than the new one, which must not show through"}`

// TestReplaceLeavesTheWholeContentWithThePermissionsAsked: a new file and
// an existing one of another mode end holding exactly the new content,
// with exactly the bits asked (Exactly) or the bits less the umask
// (Created), under an umask that narrows and one that does not, and
// nothing else in the directory.
func TestReplaceLeavesTheWholeContentWithThePermissionsAsked(t *testing.T) {
	for _, h := range hows {
		for _, c := range []struct {
			name     string
			existing bool
			perm     Perm
			umask    int
			want     fs.FileMode
		}{
			{"new, exactly 0600, umask 077", false, Exactly(0o600), 0o077, 0o600},
			{"new, exactly 0600, umask 277", false, Exactly(0o600), 0o277, 0o600},
			{"existing 0644, exactly 0600, umask 277", true, Exactly(0o600), 0o277, 0o600},
			{"existing 0600, exactly 0664, umask 022", true, Exactly(0o664), 0o022, 0o664},
			{"new, created 0666, umask 022", false, Created(0o666), 0o022, 0o644},
			{"new, created 0666, umask 0", false, Created(0o666), 0, 0o666},
			{"existing 0644, created 0600, umask 077", true, Created(0o600), 0o077, 0o600},
			{"existing 0644, created 0640, umask 027", true, Created(0o640), 0o027, 0o640},
			{"existing 0600, created 0666, umask 027", true, Created(0o666), 0o027, 0o640},
		} {
			t.Run(h.name+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "state.json")
				if c.existing {
					if err := os.WriteFile(path, []byte(oldContent), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				withUmask(t, c.umask, func() {
					if err := h.replace(t, dir, "state.json", []byte(`{"new":1}`), c.perm); err != nil {
						t.Fatal(err)
					}
				})
				b, err := os.ReadFile(path)
				if err != nil || string(b) != `{"new":1}` {
					t.Errorf("file holds %q (%v)", b, err)
				}
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if runtimeHasModes() && fi.Mode().Perm() != c.want {
					t.Errorf("mode %v, want %v (%v)", fi.Mode().Perm(), c.want, c.perm)
				}
				if names := entries(t, dir); !slices.Equal(names, []string{"state.json"}) {
					t.Errorf("directory holds %q, want the file alone", names)
				}
			})
		}
	}
}

// runtimeHasModes says whether the file system keeps Unix permissions.
func runtimeHasModes() bool { return os.PathSeparator == '/' }

// failAt is a step that fails op with a cause of its own and records the
// steps it saw.
type failAt struct {
	op    string
	cause error
	mu    sync.Mutex
	seen  []string
}

func (f *failAt) step(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, op)
	if op == f.op {
		return f.cause
	}
	return nil
}

// setStep sets the package's step for the length of t.
func setStep(t *testing.T, s func(op, name string) error) {
	t.Helper()
	step = s
	t.Cleanup(func() { step = nil })
}

// TestAFailedStepLeavesTheOldFileAsItWasAndNoTemporaryFile: each step
// before the rename failing (the create, the write, the chmod, the sync,
// the close, the rename itself) is an error that wraps its cause and
// says the path, without the data; the old file keeps its content and
// mode, and nothing else is left in the directory.
func TestAFailedStepLeavesTheOldFileAsItWasAndNoTemporaryFile(t *testing.T) {
	for _, h := range hows {
		for _, op := range []string{"create", "write", "chmod", "sync", "close", "rename"} {
			if op == "sync" && h.sync == Unsynced {
				continue
			}
			t.Run(h.name+"/"+op, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "state.json")
				if err := os.WriteFile(path, []byte(oldContent), 0o640); err != nil {
					t.Fatal(err)
				}
				f := &failAt{op: op, cause: &fs.PathError{Op: op, Path: "x", Err: syscall.EIO}}
				setStep(t, f.step)
				err := h.replace(t, dir, "state.json", []byte("secret-token"), Exactly(0o600))
				if !errors.Is(err, syscall.EIO) {
					t.Errorf("error %v, want one wrapping the step's", err)
				}
				if err != nil && strings.Contains(err.Error(), "secret-token") {
					t.Errorf("error %q holds the data", err)
				}
				if h.name == "Replace" && err != nil && !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not say the path", err)
				}
				if !slices.Contains(f.seen, op) {
					t.Errorf("step %s never ran (steps %q)", op, f.seen)
				}
				b, _ := os.ReadFile(path)
				if string(b) != oldContent {
					t.Errorf("old file holds %q", b)
				}
				if fi, _ := os.Stat(path); runtimeHasModes() && fi.Mode().Perm() != 0o640 {
					t.Errorf("old file's mode %v, want 0640", fi.Mode().Perm())
				}
				if names := entries(t, dir); !slices.Equal(names, []string{"state.json"}) {
					t.Errorf("directory holds %q, want the old file alone", names)
				}
			})
		}
	}
}

// TestAFailureOfTheFileSystemLeavesTheOldFileAndNoTemporaryFile: real
// failures, no step of the test's: a directory that refuses new files
// (an error that is fs.ErrPermission), a target that is a directory
// holding a file (the rename fails), a directory that does not exist.
func TestAFailureOfTheFileSystemLeavesTheOldFileAndNoTemporaryFile(t *testing.T) {
	t.Run("read-only directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "state.json")
		if err := os.WriteFile(path, []byte(oldContent), 0o600); err != nil {
			t.Fatal(err)
		}
		readOnlyDir(t, dir)
		err := Replace(path, []byte("new"), Exactly(0o600))
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), path) {
			t.Errorf("error %v, want fs.ErrPermission naming %s", err, path)
		}
		if b, _ := os.ReadFile(path); string(b) != oldContent {
			t.Errorf("old file holds %q", b)
		}
		if names := entries(t, dir); !slices.Equal(names, []string{"state.json"}) {
			t.Errorf("directory holds %q", names)
		}
	})
	t.Run("target is a directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "state.json")
		if err := os.MkdirAll(filepath.Join(path, "occupied"), 0o700); err != nil {
			t.Fatal(err)
		}
		err := Replace(path, []byte("secret-token"), Exactly(0o600))
		if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "secret-token") {
			t.Errorf("error %v, want one naming the path and not the data", err)
		}
		if names := entries(t, dir); !slices.Equal(names, []string{"state.json"}) {
			t.Errorf("directory holds %q", names)
		}
		if _, err := os.Stat(filepath.Join(path, "occupied")); err != nil {
			t.Errorf("the directory's content: %v", err)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		dir := t.TempDir()
		err := Replace(filepath.Join(dir, "missing", "state.json"), []byte("x"), Exactly(0o600))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error %v, want fs.ErrNotExist", err)
		}
		if names := entries(t, dir); len(names) != 0 {
			t.Errorf("directory holds %q", names)
		}
	})
}

// TestTheFileIsSyncedBeforeTheRenameAndTheDirectoryAfter: the steps run
// in this order, each once — the file's data and permissions on disk
// before its name replaces the old, and the directory (the new name's
// entry) on disk after; the umask is left alone for Created. Unsynced has
// the same steps but the two syncs, and nothing is shown to synced.
func TestTheFileIsSyncedBeforeTheRenameAndTheDirectoryAfter(t *testing.T) {
	for _, h := range hows {
		for _, c := range []struct {
			perm Perm
			want map[Sync][]string
		}{
			{Exactly(0o600), map[Sync][]string{
				Synced:   {"create", "write", "chmod", "sync", "close", "rename", "syncdir"},
				Unsynced: {"create", "write", "chmod", "close", "rename"},
			}},
			{Created(0o600), map[Sync][]string{
				Synced:   {"create", "write", "sync", "close", "rename", "syncdir"},
				Unsynced: {"create", "write", "close", "rename"},
			}},
		} {
			t.Run(h.name+"/"+c.perm.String(), func(t *testing.T) {
				dir := t.TempDir()
				var seen, shown []string
				var dirSynced string
				setStep(t, func(op, name string) error {
					seen = append(seen, op)
					if op == "syncdir" {
						dirSynced = name
					}
					return nil
				})
				setSynced(t, func(op string, f *os.File) { shown = append(shown, op) })
				if err := h.replace(t, dir, "state.json", []byte("new"), c.perm); err != nil {
					t.Fatal(err)
				}
				want := c.want[h.sync]
				if !slices.Equal(seen, want) {
					t.Errorf("steps %q, want %q", seen, want)
				}
				var wantShown []string
				if h.sync == Synced {
					wantShown = []string{"sync", "syncdir"}
				}
				if !slices.Equal(shown, wantShown) {
					t.Errorf("files synced %q, want %q", shown, wantShown)
				}
				wantDir := ""
				switch {
				case h.sync == Unsynced:
				case h.name == "Replace":
					wantDir = dir
				default:
					wantDir = "."
				}
				if dirSynced != wantDir {
					t.Errorf("synced directory %q, want %q", dirSynced, wantDir)
				}
			})
		}
	}
}

// setSynced sets the package's synced for the length of t.
func setSynced(t *testing.T, s func(op string, f *os.File)) {
	t.Helper()
	synced = s
	t.Cleanup(func() { synced = nil })
}

// TestTheFileSyncedIsTheNewFileAndTheDirectoryItsOwn: the file synced is
// the one at the name afterwards (not the old, not another), and the
// directory synced is that file's own directory, a subdirectory here (not
// the root, not the process's working directory), for Replace and
// ReplaceIn(Synced). It checks the files themselves (os.SameFile), not
// the names the step seam is told.
func TestTheFileSyncedIsTheNewFileAndTheDirectoryItsOwn(t *testing.T) {
	for _, h := range hows {
		if h.sync == Unsynced {
			continue
		}
		t.Run(h.name, func(t *testing.T) {
			dir := t.TempDir()
			sub := filepath.Join(dir, "sub")
			if err := os.Mkdir(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(sub, "state.json")
			if err := os.WriteFile(path, []byte(oldContent), 0o600); err != nil {
				t.Fatal(err)
			}
			infos := map[string]fs.FileInfo{}
			setSynced(t, func(op string, f *os.File) {
				fi, err := f.Stat()
				if err != nil {
					t.Errorf("%s: %v", op, err)
					return
				}
				if _, twice := infos[op]; twice {
					t.Errorf("%s shown twice", op)
				}
				infos[op] = fi
			})
			if err := h.replace(t, dir, "sub/state.json", []byte("new"), Exactly(0o600)); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ op, want string }{{"sync", path}, {"syncdir", sub}} {
				want, err := os.Stat(c.want)
				if err != nil {
					t.Fatal(err)
				}
				got, ok := infos[c.op]
				if !ok {
					t.Errorf("%s: nothing synced", c.op)
					continue
				}
				if !os.SameFile(got, want) {
					t.Errorf("%s synced %s (%v), want %s", c.op, got.Name(), got.Mode(), c.want)
				}
			}
		})
	}
}

// TestAFailedDirectorySyncIsNoError: the rename is made by then; the file
// is replaced and no error is reported (see Replace's doc).
func TestAFailedDirectorySyncIsNoError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	f := &failAt{op: "syncdir", cause: syscall.EINVAL}
	setStep(t, f.step)
	if err := Replace(path, []byte("new"), Exactly(0o600)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file holds %q", b)
	}
}

// TestManyReplacingAtOnceEveryReadSeesOneWholeContent: goroutines replace
// one file over and over, each with a content of its own length, while
// readers read it: every read is one of the contents whole, never torn,
// empty or missing; no temporary file is left.
func TestManyReplacingAtOnceEveryReadSeesOneWholeContent(t *testing.T) {
	for _, h := range hows {
		t.Run(h.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			const writers = 8
			var contents [writers][]byte
			for i := range contents {
				contents[i] = bytes.Repeat([]byte{byte('a' + i)}, 1000+i*9000)
			}
			if err := os.WriteFile(path, contents[0], 0o600); err != nil {
				t.Fatal(err)
			}
			var stop atomic.Bool
			var bad atomic.Int32
			var firstBad atomic.Value
			var readers sync.WaitGroup
			for range 2 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					for !stop.Load() {
						b, err := os.ReadFile(path)
						if err != nil || !slices.ContainsFunc(contents[:], func(c []byte) bool { return bytes.Equal(b, c) }) {
							bad.Add(1)
							firstBad.CompareAndSwap(nil, fmt.Sprintf("%d bytes (%v)", len(b), err))
						}
					}
				}()
			}
			var ws sync.WaitGroup
			for w := range writers {
				ws.Add(1)
				go func() {
					defer ws.Done()
					for range 50 {
						if err := h.replace(t, dir, "state.json", contents[w], Exactly(0o600)); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			ws.Wait()
			stop.Store(true)
			readers.Wait()
			if n := bad.Load(); n > 0 {
				t.Errorf("%d reads saw no content whole; the first: %v", n, firstBad.Load())
			}
			if names := entries(t, dir); !slices.Equal(names, []string{"state.json"}) {
				t.Errorf("directory holds %q", names)
			}
		})
	}
}

// TestAHardLinkToTheOldFileKeepsTheOldContent: the new content is a new
// file, never written through the old one.
func TestAHardLinkToTheOldFileKeepsTheOldContent(t *testing.T) {
	for _, h := range hows {
		t.Run(h.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if err := os.WriteFile(path, []byte(oldContent), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(path, filepath.Join(dir, "link")); err != nil {
				t.Skipf("no hard links here: %v", err)
			}
			if err := h.replace(t, dir, "state.json", []byte("new"), Exactly(0o600)); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "link")); string(b) != oldContent {
				t.Errorf("the link holds %q", b)
			}
		})
	}
}

// TestALongNameIsReplaced: a name of 250 bytes (ending in a rune of
// several bytes cut by the clip) still gets a temporary name the file
// system takes.
func TestALongNameIsReplaced(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("a", 199) + strings.Repeat("é", 25) // 249 bytes, a rune across byte 200
	path := filepath.Join(dir, name)
	var tmp string
	setStep(t, func(op, name string) error {
		if op == "create" {
			tmp = filepath.Base(name)
		}
		return nil
	})
	if err := Replace(path, []byte("new"), Exactly(0o600)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file holds %q", b)
	}
	if !strings.HasPrefix(tmp, "."+strings.Repeat("a", 199)+".myelin-") {
		t.Errorf("temporary name %q, want the name clipped to whole runes", tmp)
	}
}

// TestReplaceInSyncsTheFilesOwnDirectory: a name in a subdirectory of the
// root has that subdirectory synced, not the root, and is replaced there.
func TestReplaceInSyncsTheFilesOwnDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var synced []string
	setStep(t, func(op, name string) error {
		if op == "syncdir" {
			synced = append(synced, name)
		}
		return nil
	})
	if err := ReplaceIn(r, "sub/state.json", []byte("new"), Created(0o600), Synced); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(synced, []string{"sub"}) {
		t.Errorf("synced %q, want [sub]", synced)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "state.json")); string(b) != "new" {
		t.Errorf("file holds %q", b)
	}
	if names := entries(t, filepath.Join(dir, "sub")); !slices.Equal(names, []string{"state.json"}) {
		t.Errorf("sub holds %q", names)
	}
}

// TestReplaceInStaysInsideTheRoot: a name that leads out of the root
// through a symbolic link is refused, and nothing is written outside.
func TestReplaceInStaysInsideTheRoot(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := ReplaceIn(r, "out/state.json", []byte("new"), Exactly(0o600), Unsynced); err == nil {
		t.Error("a name leading outside the root was replaced")
	}
	if names := entries(t, outside); len(names) != 0 {
		t.Errorf("outside holds %q", names)
	}
}
