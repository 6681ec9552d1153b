package rewind_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/rewind"
)

// A file the tools changed whose path is now a symbolic link — the user
// moved the file and left a link where it was, or linked a directory on
// the way — is left, and the file the link leads to is not touched: the
// tools changed the file at that path, not the one behind the link.
func TestARewindLeavesAFileWhosePathIsNowASymbolicLink(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.store, map[string]string{"a.txt": "v0", "d/f.txt": "f0"})
			r.turn("make, edit", r.write("out.txt", nil, "made"), r.write("a.txt", str("v0"), "v1"), r.write("d/f.txt", str("f0"), "f1"))
			// the user moved all three and left links
			r.put("keep/out.txt", "made")
			r.put("keep/a.txt", "v1")
			r.put("real/f.txt", "f1")
			for _, p := range []string{"a.txt", "d"} {
				if err := os.RemoveAll(filepath.Join(r.dir, p)); err != nil {
					t.Fatal(err)
				}
			}
			for link, to := range map[string]string{"out.txt": "keep/out.txt", "a.txt": "keep/a.txt", "d": "real"} {
				if err := os.Symlink(to, filepath.Join(r.dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			_, files, err := rewind.Rewind(r.ctx, r.store, "c", 0, rewind.Options{Files: r.ws})
			if err != nil {
				t.Fatal(err)
			}
			if files.Restored != nil || files.Removed != nil || len(files.Skipped) != 3 {
				t.Fatalf("files: %+v; want all three skipped, none restored or removed", files)
			}
			for i, says := range []string{"a.txt is now a symbolic link (to keep/a.txt)", "d is now a symbolic link (to real)", "out.txt is now a symbolic link (to keep/out.txt)"} {
				if s := files.Skipped[i]; !strings.Contains(s.Why, says) || !strings.Contains(s.Why, "left as it is") {
					t.Errorf("skipped %s: %q; want it to say %q and that it was left", s.Path, s.Why, says)
				}
			}
			want := map[string]string{"keep/out.txt": "made", "keep/a.txt": "v1", "real/f.txt": "f1"}
			for name, content := range want {
				if b, err := os.ReadFile(filepath.Join(r.dir, name)); err != nil || string(b) != content {
					t.Errorf("%s, behind a link: %q, %v; want it untouched (%q)", name, b, err, content)
				}
			}
			for link, to := range map[string]string{"out.txt": "keep/out.txt", "a.txt": "keep/a.txt", "d": "real"} {
				if got, err := os.Readlink(filepath.Join(r.dir, link)); err != nil || !reflect.DeepEqual(got, to) {
					t.Errorf("the link %s: %q, %v; want it left pointing to %s", link, got, err, to)
				}
			}
		})
	}
}
