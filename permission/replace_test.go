package permission

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRememberReplacesTheFileWholeForTheUserAlone: the rules file is
// replaced whole (through internal/wholefile): a new file of mode 0600
// exactly, whatever was at the name before or beside it — an existing
// file of another mode, a hard link to it (which keeps the old rules), a
// permissions.json.new left by an earlier myelin (the old temporary
// name, which was truncated and reused, keeping its mode, and followed
// when it was a link) — and nothing new is left beside it.
func TestRememberReplacesTheFileWholeForTheUserAlone(t *testing.T) {
	const old = `{"allow": ["ls"]}`
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, path string)
		check func(t *testing.T, path string)
	}{
		{"no file", func(*testing.T, string) {}, nil},
		{"an existing file of mode 0644", func(t *testing.T, path string) {
			write(t, path, old, 0o644)
		}, nil},
		{"a hard link to the old file", func(t *testing.T, path string) {
			write(t, path, old, 0o600)
			if err := os.Link(path, path+".link"); err != nil {
				t.Skipf("no hard links: %v", err)
			}
		}, func(t *testing.T, path string) {
			if b, _ := os.ReadFile(path + ".link"); string(b) != old {
				t.Errorf("the hard link holds %q, want the old rules", b)
			}
		}},
		{"a permissions.json.new of mode 0644 left beside it", func(t *testing.T, path string) {
			write(t, path, old, 0o600)
			write(t, path+".new", "", 0o644)
		}, nil},
		{"a permissions.json.new linked to another file", func(t *testing.T, path string) {
			write(t, path, old, 0o600)
			elsewhere := filepath.Join(filepath.Dir(filepath.Dir(path)), "elsewhere")
			write(t, elsewhere, "mine", 0o644)
			if err := os.Symlink(elsewhere, path+".new"); err != nil {
				t.Skipf("no symbolic links: %v", err)
			}
		}, func(t *testing.T, path string) {
			if b, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(path)), "elsewhere")); string(b) != "mine" {
				t.Errorf("the link's target holds %q, want it untouched", b)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "myelin", "permissions.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			c.setup(t, path)
			before := names(t, filepath.Dir(path))
			if err := Remember(path, "go test *"); err != nil {
				t.Fatal(err)
			}
			rules, _, err := ReadFile(path, false)
			if err != nil || len(rules) == 0 || rules[len(rules)-1].Text != "go test *" {
				t.Errorf("rules %+v (%v), want go test * last", rules, err)
			}
			st, err := os.Lstat(path)
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
				t.Errorf("the rules file: %v (%v), want a regular file of mode 0600", st.Mode(), err)
			}
			if after := names(t, filepath.Dir(path)); !slices.Equal(after, before) && !slices.Equal(after, append(before, "permissions.json")) {
				t.Errorf("directory holds %q, before %q", after, before)
			}
			if c.check != nil {
				c.check(t, path)
			}
		})
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// names is the sorted names in dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}
