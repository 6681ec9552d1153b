package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/skipped"
)

// gitConfig is a config that makes git run a command (touching the file
// ran) whenever it shows output through a pager or asks its file system
// monitor: what the model would put in sub/config (issue 26 §5).
const gitConfig = "[core]\n\tpager = touch ../ran; cat\n\tfsmonitor = touch ../ran; false\n"

// A write that would give a directory of any name a HEAD beside objects,
// refs or commondir is refused, whichever comes first; everything before
// it is written.
func TestFileToolsRefuseToMakeADirectoryAGitRepository(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string // written first, as the model would
		refused []string // each refused after them
	}{
		{"HEAD first", []string{"sub/HEAD", "sub/config"},
			[]string{"sub/objects/info/packs", "sub/refs/heads/main", "sub/commondir", "sub/Refs/x"}},
		{"objects and refs first", []string{"sub/objects/info/packs", "sub/refs/heads/main", "sub/config"},
			[]string{"sub/HEAD", "sub/head"}},
		{"commondir first", []string{"sub/commondir"}, []string{"sub/HEAD"}},
		{"at the root", []string{"refs/heads/main"}, []string{"HEAD"}},
		{"deep down", []string{"a/b/c.git/HEAD"}, []string{"a/b/c.git/refs/heads/main"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			for _, p := range tt.allowed {
				if out := f.call(t, "workspace--write", WriteInput{Path: p, Content: "ref: refs/heads/main\n"}); out.IsError {
					t.Fatalf("write %s, which alone makes no repository: %q", p, out.Text)
				}
			}
			for _, p := range tt.refused {
				before, _ := os.ReadFile(filepath.Join(f.dir, p))
				out := f.call(t, "workspace--write", WriteInput{Path: p, Content: "ref: refs/heads/evil\n"})
				if !out.IsError || !strings.Contains(out.Text, "may not be written") || !strings.Contains(out.Text, "would hold a HEAD beside") {
					t.Fatalf("write %s after %v: %q, want it refused as making a git repository", p, tt.allowed, out.Text)
				}
				if after, _ := os.ReadFile(filepath.Join(f.dir, p)); string(after) != string(before) {
					t.Fatalf("refused write %s changed it to %q", p, after)
				}
			}
		})
	}
}

// A bare repository the user keeps in the workspace is as protected as
// .git: its config and hooks are not written, nor edited, nor reached
// through a symbolic link.
func TestFileToolsRefuseToWriteInsideABareRepository(t *testing.T) {
	f := newFixture(t)
	f.write(t, "mirror.git/HEAD", "ref: refs/heads/main\n")
	f.write(t, "mirror.git/config", "[core]\n\tbare = true\n")
	f.write(t, "mirror.git/refs/heads/.keep", "")
	f.write(t, "mirror.git/objects/.keep", "")
	if err := os.Symlink("mirror.git", filepath.Join(f.dir, "innocent")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"mirror.git/config", "mirror.git/hooks/post-checkout", "mirror.git/info/attributes", "innocent/config"} {
		out := f.call(t, "workspace--write", WriteInput{Path: p, Content: gitConfig})
		if !out.IsError || !strings.Contains(out.Text, "would hold a HEAD beside") {
			t.Errorf("write %s: %q, want it refused as inside a git repository", p, out.Text)
		}
	}
	out := f.call(t, "workspace--edit", EditInput{Path: "mirror.git/config", OldString: "bare = true", NewString: "pager = touch ../ran"})
	if !out.IsError || !strings.Contains(out.Text, "would hold a HEAD beside") {
		t.Errorf("edit mirror.git/config: %q, want it refused", out.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "mirror.git/config")); string(b) != "[core]\n\tbare = true\n" {
		t.Errorf("mirror.git/config is now %q", b)
	}
}

// What only looks like part of a repository stays writable: a HEAD alone,
// refs or objects alone, a HEAD in one directory and refs in another.
func TestFileToolsMayWriteHalfOfARepositorysShape(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"a/HEAD", "a/config", "a/hooks/x", "b/refs/x", "b/objects/y", "c/head.txt", "c/refs.md", "d/HEAD/x"} {
		if out := f.call(t, "workspace--write", WriteInput{Path: p, Content: "ok"}); out.IsError {
			t.Fatalf("write %s: %q", p, out.Text)
		}
	}
}

// The attack itself, with the real git: the files of a bare repository
// with a pager and a file system monitor in its config, written through
// the tools in either order, then git run in that directory on a terminal
// (as a user's `git branch` would be). The same files made by hand make
// git run the command: that is what the test would see if the tools wrote
// them.
func TestGitRunsNothingFromFilesTheToolsWrote(t *testing.T) {
	for _, prog := range []string{"git", "script"} {
		if _, err := exec.LookPath(prog); err != nil {
			skipped.Need(t, prog, "apt-get install "+map[string]string{"git": "git", "script": "bsdutils"}[prog])
		}
	}
	files := map[string]string{
		"sub/HEAD":             "ref: refs/heads/main\n",
		"sub/config":           gitConfig,
		"sub/objects/info/.k":  "",
		"sub/refs/heads/.keep": "",
	}
	orders := map[string][]string{
		"HEAD first":  {"sub/HEAD", "sub/config", "sub/objects/info/.k", "sub/refs/heads/.keep"},
		"HEAD last":   {"sub/config", "sub/objects/info/.k", "sub/refs/heads/.keep", "sub/HEAD"},
		"config last": {"sub/objects/info/.k", "sub/refs/heads/.keep", "sub/HEAD", "sub/config"},
	}
	t.Run("made by hand, git runs the command", func(t *testing.T) {
		f := newFixture(t)
		for p, content := range files {
			f.write(t, p, content)
		}
		runGitIn(t, filepath.Join(f.dir, "sub"))
		if _, err := os.Stat(filepath.Join(f.dir, "ran")); err != nil {
			t.Fatalf("git did not run the pager of a repository made by hand, so this test cannot see the attack: %v", err)
		}
	})
	for name, order := range orders {
		t.Run("through the tools, "+name, func(t *testing.T) {
			f := newFixture(t)
			refused := 0
			for _, p := range order {
				if out := f.call(t, "workspace--write", WriteInput{Path: p, Content: files[p]}); out.IsError {
					refused++
				}
			}
			runGitIn(t, filepath.Join(f.dir, "sub"))
			if _, err := os.Stat(filepath.Join(f.dir, "ran")); err == nil {
				t.Error("git ran the command of a config the tools wrote")
			}
			if refused == 0 {
				t.Error("every file of the repository was written")
			}
		})
	}
}

// runGitIn runs, in dir, the git commands that ran the pager in issue 26
// §5, each on a terminal (util-linux `script`), with no config but dir's
// own (no global or system config, no pager from the environment).
func runGitIn(t *testing.T, dir string) {
	t.Helper()
	home := t.TempDir()
	for _, args := range []string{"branch", "tag", "config -l", "diff", "status"} {
		cmd := exec.Command("script", "-qec", "git "+args, "/dev/null")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(filepath.Dir(dir))}
		out, _ := cmd.CombinedOutput() // git fails outside a repository: that is the point
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		t.Logf("git %s: %s", args, first)
	}
}
