package mcp

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestApproveReplacesTheApprovalsFileWholeForTheUserAlone: the approvals
// file is replaced whole (through internal/wholefile): a new file of mode
// 0600 exactly whatever the old one's mode, a hard link to the old file
// keeps the old approvals, and nothing is left beside it.
func TestApproveReplacesTheApprovalsFileWholeForTheUserAlone(t *testing.T) {
	for _, c := range []struct {
		name     string
		oldMode  os.FileMode // 0: no file
		hardLink bool
	}{
		{"no file", 0, false},
		{"an existing file of mode 0644", 0o644, false},
		{"a hard link to the old file", 0o600, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "myelin")
			store := TrustStore{Path: filepath.Join(dir, TrustFileName)}
			const old = `{"approved": {}}`
			var want []string
			if c.oldMode != 0 {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(store.Path, []byte(old), c.oldMode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(store.Path, c.oldMode)
			}
			if c.hardLink {
				if err := os.Link(store.Path, store.Path+".link"); err != nil {
					t.Skipf("no hard links: %v", err)
				}
				want = append(want, TrustFileName+".link")
			}
			cfg := filepath.Join(t.TempDir(), ".mcp.json")
			if err := store.Approve(cfg, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if ok, err := store.Approved(cfg, []byte("{}")); !ok || err != nil {
				t.Errorf("approved %v (%v) after Approve", ok, err)
			}
			st, err := os.Lstat(store.Path)
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
				t.Errorf("the approvals file: %v (%v), want a regular file of mode 0600", st.Mode(), err)
			}
			if c.hardLink {
				if b, _ := os.ReadFile(store.Path + ".link"); string(b) != old {
					t.Errorf("the hard link holds %q, want the old approvals", b)
				}
			}
			want = append(want, TrustFileName)
			slices.Sort(want)
			es, _ := os.ReadDir(dir)
			var got []string
			for _, e := range es {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, want) {
				t.Errorf("directory holds %q, want %q", got, want)
			}
		})
	}
}
