package oauth

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/oauth2"
)

// TestSaveReplacesTheTokensFileWholeForTheUserAlone: a server's tokens
// file is replaced whole (through internal/wholefile): a new file of mode
// 0600 exactly whatever the old one's mode, in a directory of mode 0700
// made when there is none, a hard link to the old file keeps the old
// tokens, and nothing is left beside it.
func TestSaveReplacesTheTokensFileWholeForTheUserAlone(t *testing.T) {
	const url = "https://mcp.example/mcp"
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
			s := &Store{Dir: filepath.Join(t.TempDir(), "mcp-tokens")}
			const old = `{"old": true}`
			want := []string{}
			if c.oldMode != 0 {
				if err := os.MkdirAll(s.Dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(s.Path(url), []byte(old), c.oldMode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(s.Path(url), c.oldMode)
			}
			if c.hardLink {
				if err := os.Link(s.Path(url), filepath.Join(s.Dir, "link")); err != nil {
					t.Skipf("no hard links: %v", err)
				}
				want = append(want, "link")
			}
			e := &Entry{Server: "srv", URL: url, ClientID: "cli", TokenURL: "https://as.example/token", Token: &oauth2.Token{AccessToken: "new-token"}}
			if err := s.Save(e); err != nil {
				t.Fatal(err)
			}
			got, err := s.Load(url)
			if err != nil || got == nil || got.Token.AccessToken != "new-token" {
				t.Errorf("loaded %+v (%v), want the new token", got, err)
			}
			st, err := os.Lstat(s.Path(url))
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
				t.Errorf("the tokens file: %v (%v), want a regular file of mode 0600", st.Mode(), err)
			}
			if st, err := os.Stat(s.Dir); c.oldMode == 0 && (err != nil || st.Mode().Perm() != 0o700) {
				t.Errorf("the directory made: %v (%v), want mode 0700", st.Mode(), err)
			}
			if c.hardLink {
				if b, _ := os.ReadFile(filepath.Join(s.Dir, "link")); string(b) != old {
					t.Errorf("the hard link holds %q, want the old tokens", b)
				}
			}
			want = append(want, filepath.Base(s.Path(url)))
			slices.Sort(want)
			es, _ := os.ReadDir(s.Dir)
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, want) {
				t.Errorf("directory holds %q, want %q", names, want)
			}
		})
	}
}
