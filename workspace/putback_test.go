package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func openTemp(t *testing.T) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

// PutBack writes a file whole, making missing directories, keeps an
// existing file's permissions, and removes one; Current reads it back, or
// says there is none.
func TestPutBackWritesAndRemovesAndCurrentReadsBack(t *testing.T) {
	w, dir := openTemp(t)
	if _, exists, err := w.Current("deep/new.txt"); err != nil || exists {
		t.Fatalf("Current of a missing file: exists %v, %v; want false, nil", exists, err)
	}
	if err := w.PutBack("deep/new.txt", []byte("made"), false); err != nil {
		t.Fatalf("PutBack into a missing directory: %v", err)
	}
	if data, exists, err := w.Current("deep/new.txt"); err != nil || !exists || string(data) != "made" {
		t.Fatalf("Current after PutBack: %q, %v, %v; want made", data, exists, err)
	}
	p := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(p, []byte("old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	if err := w.PutBack("script.sh", []byte("new"), false); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o751 {
		t.Fatalf("the put-back file's mode: %v, %v; want 0751 kept", st.Mode(), err)
	}
	if err := w.PutBack("deep/new.txt", nil, true); err != nil {
		t.Fatalf("PutBack remove: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "deep/new.txt")); !os.IsNotExist(err) {
		t.Fatalf("the removed file: %v; want it gone", err)
	}
	if err := w.PutBack("deep/new.txt", nil, true); err != nil {
		t.Fatalf("removing a file already gone: %v; want nil", err)
	}
}

// PutBack and Current keep to the write tool's paths: nothing outside the
// workspace, through a link or not, nor the files the tools never write.
func TestPutBackRefusesWhatTheWriteToolRefuses(t *testing.T) {
	w, dir := openTemp(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, says string
		remove     bool
	}{
		{"../x", `contains ".."`, false},
		{"/etc/passwd", "is absolute", false},
		{"out/secret", "leads outside the workspace", false},
		{"out/secret", "leads outside the workspace", true},
		{".git/config", "may not be written", false},
		{".myelin/history.db", "may not be written", true},
		{"adir", "is a directory", false},
		{"", "no file to put back", false},
	} {
		err := w.PutBack(tc.path, []byte("x"), tc.remove)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("PutBack(%q, remove %v): %v; want it refused saying %q", tc.path, tc.remove, err, tc.says)
		}
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "theirs" {
		t.Fatalf("the file outside: %q, %v; want it untouched", b, err)
	}
	for _, tc := range []struct{ path, says string }{
		{"out/secret", "leads outside the workspace"},
		{"../x", `contains ".."`},
		{"adir", "is a directory"},
	} {
		if _, _, err := w.Current(tc.path); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Current(%q): %v; want it refused saying %q", tc.path, err, tc.says)
		}
	}
}

// A recorded path that now goes through a symbolic link — the file
// itself, or a directory on the way — leads to a file the tools did not
// change: Current and PutBack refuse it with ErrNowLinked, saying which
// part is a link and to where, and the file it leads to is not touched.
func TestPutBackAndCurrentLeaveAPathThatIsNowASymbolicLink(t *testing.T) {
	w, dir := openTemp(t)
	put := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// the tools wrote out.txt and d/f.txt; the user moved both and left
	// links where they were
	put("keep/out.txt", "the tools' out")
	put("real/f.txt", "the tools' f")
	if err := os.Symlink("keep/out.txt", filepath.Join(dir, "out.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, says string }{
		{"out.txt", "out.txt is now a symbolic link (to keep/out.txt)"},
		{"d/f.txt", "d is now a symbolic link (to real)"},
	} {
		if _, _, err := w.Current(tc.path); !errors.Is(err, ErrNowLinked) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "left as it is") {
			t.Errorf("Current(%q): %v; want ErrNowLinked saying %q and that it was left", tc.path, err, tc.says)
		}
		for _, remove := range []bool{true, false} {
			if err := w.PutBack(tc.path, []byte("put back"), remove); !errors.Is(err, ErrNowLinked) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("PutBack(%q, remove %v): %v; want ErrNowLinked saying %q", tc.path, remove, err, tc.says)
			}
		}
	}
	for name, want := range map[string]string{"keep/out.txt": "the tools' out", "real/f.txt": "the tools' f"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s, behind a link: %q, %v; want it untouched (%q)", name, b, err, want)
		}
	}
	for _, name := range []string{"out.txt", "d"} {
		if st, err := os.Lstat(filepath.Join(dir, name)); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link %s: %v, %v; want it left in place", name, st, err)
		}
	}
}
