package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// fixture is a workspace in a temporary directory, with a sibling directory
// outside it that nothing may touch.
type fixture struct {
	ws      *Workspace
	dir     string
	outside string
	d       *tool.Dispatcher
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := &tool.Registry{}
	if err := reg.Add(ws.Tools()...); err != nil {
		t.Fatal(err)
	}
	return &fixture{ws: ws, dir: dir, outside: outside, d: &tool.Dispatcher{Tools: reg, Env: result.Env{Store: ws}}}
}

func (f *fixture) write(t *testing.T, name, content string) {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// call runs a tool through the dispatcher, as the model would.
func (f *fixture) call(t *testing.T, name string, input any) result.Output {
	t.Helper()
	return f.callCap(t, name, input, 0)
}

func (f *fixture) callCap(t *testing.T, name string, input any, cap int) result.Output {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return f.d.Call(context.Background(), tool.Call{ID: "t", Name: name, Input: raw, Cap: cap})
}

// assertOutsideUntouched checks that the directory outside holds only what
// the fixture put there.
func (f *fixture) assertOutsideUntouched(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(f.outside)
	if len(entries) != 1 {
		t.Fatalf("something was written outside the workspace: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "secret.txt")); string(b) != "secret\n" {
		t.Fatal("a file outside the workspace was changed")
	}
}

func TestRelRefusesPathsThatLeadOut(t *testing.T) {
	for p, want := range map[string]string{
		"../x":         `contains ".."`,
		"a/../../x":    `contains ".."`,
		"a/..":         `contains ".."`,
		"/etc/passwd":  "is absolute",
		"a\x00b":       "NUL",
		"ok/../../etc": `contains ".."`,
	} {
		if _, err := Rel(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Rel(%q) = %v, want an error saying %q", p, err, want)
		}
	}
	for p, want := range map[string]string{"": ".", "a/./b/": "a/b", "./x": "x"} {
		if got, err := Rel(p); err != nil || got != want {
			t.Errorf("Rel(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
}

func TestEveryToolRefusesPathsOutsideTheWorkspace(t *testing.T) {
	f := newFixture(t)
	if err := os.Symlink(f.outside, filepath.Join(f.dir, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.dir, "secret-link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool  string
		input map[string]any
	}{
		{"workspace--read", map[string]any{"path": "../outside/secret.txt"}},
		{"workspace--read", map[string]any{"path": f.outside + "/secret.txt"}},
		{"workspace--read", map[string]any{"path": "/etc/passwd"}},
		{"workspace--read", map[string]any{"path": "secret-link"}},
		{"workspace--read", map[string]any{"path": "link-out/secret.txt"}},
		{"workspace--read", map[string]any{"path": "a\x00b"}},
		{"workspace--write", map[string]any{"path": "../outside/new.txt", "content": "x"}},
		{"workspace--write", map[string]any{"path": "link-out/new.txt", "content": "x"}},
		{"workspace--write", map[string]any{"path": "secret-link", "content": "changed"}},
		{"workspace--write", map[string]any{"path": "/tmp/x", "content": "x"}},
		{"workspace--edit", map[string]any{"path": "secret-link", "old_string": "secret", "new_string": "x"}},
		{"workspace--list", map[string]any{"path": "link-out"}},
		{"workspace--list", map[string]any{"path": ".."}},
		{"workspace--grep", map[string]any{"pattern": "secret", "path": "link-out"}},
		{"workspace--grep", map[string]any{"pattern": "secret", "path": "../outside"}},
		{"workspace--glob", map[string]any{"pattern": "../*"}},
	} {
		out := f.call(t, tc.tool, tc.input)
		if !out.IsError {
			t.Errorf("%s %v succeeded: %q", tc.tool, tc.input, out.Text)
		}
		if strings.Contains(out.Text, "secret\n") {
			t.Errorf("%s %v read outside: %q", tc.tool, tc.input, out.Text)
		}
	}
	// a recursive grep passes over the link and reads nothing outside
	if out := f.call(t, "workspace--grep", map[string]any{"pattern": "secret"}); strings.Contains(out.Text, ":1:secret") {
		t.Fatalf("grep followed a link out: %q", out.Text)
	}
	f.assertOutsideUntouched(t)
}

func TestSymlinkOutIsExplained(t *testing.T) {
	f := newFixture(t)
	if err := os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.dir, "secret-link")); err != nil {
		t.Fatal(err)
	}
	out := f.call(t, "workspace--read", map[string]any{"path": "secret-link"})
	if !strings.Contains(out.Text, "leads outside the workspace") {
		t.Fatalf("got %q", out.Text)
	}
}

func TestSymlinkInsideIsFollowed(t *testing.T) {
	f := newFixture(t)
	f.write(t, "real.txt", "inside\n")
	if err := os.Symlink("real.txt", filepath.Join(f.dir, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	if out := f.call(t, "workspace--read", map[string]any{"path": "alias.txt"}); out.IsError || !strings.Contains(out.Text, "inside") {
		t.Fatalf("got %+v", out)
	}
}

func TestSaveNeverOverwrites(t *testing.T) {
	f := newFixture(t)
	a, err := f.ws.Save("x.txt", "first")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.ws.Save("x.txt", "second")
	if err != nil {
		t.Fatal(err)
	}
	if a != ".myelin/tool-results/x.txt" || b != ".myelin/tool-results/x-2.txt" {
		t.Fatalf("paths %q %q", a, b)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, a)); string(got) != "first" {
		t.Fatal("the first file was overwritten")
	}
	if _, err := f.ws.Save("../evil", "x"); err == nil {
		t.Fatal("Save took a name with a slash")
	}
}

func TestSpillThatCannotBeWrittenSaysWhy(t *testing.T) {
	f := newFixture(t)
	// a file where the results directory should be fails for root too
	f.write(t, ".myelin", "in the way")
	if _, err := f.ws.Save("x.txt", "data"); err == nil {
		t.Fatal("Save succeeded with .myelin a file")
	}
	out := result.One(result.Call{ID: "big", Result: result.Result{Data: strings.Repeat("line\n", 10000)}}, result.Env{Store: f.ws})
	if out.SpillPath != "" || !strings.Contains(out.Text, "The rest was not kept: it could not be written to the workspace (.myelin is not a directory, where myelin keeps a directory of its own: move it away).") {
		t.Fatalf("notice = %q", out.Text[len(out.Text)-300:])
	}
}

func TestWriteCreatesDirectoriesAndRefusesADirectory(t *testing.T) {
	f := newFixture(t)
	out := f.call(t, "workspace--write", map[string]any{"path": "a/b/c.txt", "content": "one\ntwo\n"})
	if out.IsError || out.Text != "created a/b/c.txt: 8 characters, 2 lines" {
		t.Fatalf("got %+v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "a/b/c.txt")); string(b) != "one\ntwo\n" {
		t.Fatalf("file holds %q", b)
	}
	out = f.call(t, "workspace--write", map[string]any{"path": "a/b/c.txt", "content": "new"})
	if out.IsError || !strings.HasPrefix(out.Text, "replaced a/b/c.txt") {
		t.Fatalf("got %+v", out)
	}
	out = f.call(t, "workspace--write", map[string]any{"path": "a/b", "content": "x"})
	if !out.IsError || !strings.Contains(out.Text, "a/b is a directory") {
		t.Fatalf("got %+v", out)
	}
	if st, err := os.Stat(filepath.Join(f.dir, "a/b")); err != nil || !st.IsDir() {
		t.Fatal("the directory was written over")
	}
	var s map[string]any
	_ = json.Unmarshal(f.call(t, "workspace--write", map[string]any{"path": "n.txt", "content": "é"}).Structured, &s)
	if s["chars"] != 1.0 || s["bytes"] != 2.0 || s["created"] != true {
		t.Fatalf("structured = %v", s)
	}
}

func TestEditReplacesAUniqueMatchOrAllWhenAsked(t *testing.T) {
	f := newFixture(t)
	f.write(t, "e.txt", "alpha beta\nbeta gamma\n")
	out := f.call(t, "workspace--edit", map[string]any{"path": "e.txt", "old_string": "beta", "new_string": "B"})
	if !out.IsError || !strings.Contains(out.Text, "occurs 2 times") {
		t.Fatalf("got %+v", out)
	}
	out = f.call(t, "workspace--edit", map[string]any{"path": "e.txt", "old_string": "alpha beta", "new_string": "A"})
	if out.IsError || out.Text != "replaced 1 occurrence(s) in e.txt" {
		t.Fatalf("got %+v", out)
	}
	out = f.call(t, "workspace--edit", map[string]any{"path": "e.txt", "old_string": "a", "new_string": "4", "replace_all": true})
	if out.IsError || string(out.Structured) != `{"path":"e.txt","replacements":3}` {
		t.Fatalf("got %+v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "e.txt")); string(b) != "A\nbet4 g4mm4\n" {
		t.Fatalf("file holds %q", b)
	}
	for _, in := range []map[string]any{
		{"path": "e.txt", "old_string": "zzz", "new_string": "y"},
		{"path": "e.txt", "old_string": "", "new_string": "y"},
		{"path": "e.txt", "old_string": "A", "new_string": "A"},
		{"path": "missing.txt", "old_string": "A", "new_string": "B"},
	} {
		if out := f.call(t, "workspace--edit", in); !out.IsError {
			t.Errorf("%v succeeded: %q", in, out.Text)
		}
	}
}

func TestListShowsEntriesSorted(t *testing.T) {
	f := newFixture(t)
	f.write(t, "b.txt", "12345")
	f.write(t, "a/x.txt", "")
	if err := os.Symlink("b.txt", filepath.Join(f.dir, "c-link")); err != nil {
		t.Fatal(err)
	}
	out := f.call(t, "workspace--list", map[string]any{})
	if want := "a/\nb.txt\t5 bytes\nc-link -> b.txt"; out.Text != want {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
	if !strings.Contains(string(out.Structured), `{"name":"b.txt","type":"file","size":5}`) {
		t.Fatalf("structured = %s", out.Structured)
	}
	if out := f.call(t, "workspace--list", map[string]any{"path": "b.txt"}); !out.IsError {
		t.Fatal("listing a file succeeded")
	}
	if out := f.call(t, "workspace--list", map[string]any{"path": "a"}); out.Text != "x.txt\t0 bytes" {
		t.Fatalf("text = %q", out.Text)
	}
}

func TestGlobMatchesAcrossDirectories(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"main.go", "cmd/x/main.go", "cmd/x/main_test.go", "docs/a.md", ".git/hooks/h.go"} {
		f.write(t, p, "")
	}
	for pattern, want := range map[string]string{
		"**/*.go":      "cmd/x/main.go\ncmd/x/main_test.go\nmain.go",
		"*.go":         "main.go",
		"cmd/**":       "cmd\ncmd/x\ncmd/x/main.go\ncmd/x/main_test.go",
		"cmd/*/main.*": "cmd/x/main.go",
		"docs/*.md":    "docs/a.md",
		"*.rs":         "[no paths match *.rs]",
	} {
		out := f.call(t, "workspace--glob", map[string]any{"pattern": pattern})
		if out.Text != want {
			t.Errorf("glob %s = %q, want %q", pattern, out.Text, want)
		}
	}
	out := f.call(t, "workspace--glob", map[string]any{"pattern": "**/*.go"})
	if string(out.Structured) != `{"paths":["cmd/x/main.go","cmd/x/main_test.go","main.go"],"total":3}` {
		t.Fatalf("structured = %s", out.Structured)
	}
	if out := f.call(t, "workspace--glob", map[string]any{"pattern": "[a-"}); !out.IsError {
		t.Fatal("an invalid glob succeeded")
	}
}

func TestMatchGlob(t *testing.T) {
	for _, tc := range []struct {
		glob, path string
		want       bool
	}{
		{"**/*.go", "a.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"a/**/c", "a/c", true},
		{"a/**/c", "a/x/y/c", true},
		{"a/**/c", "b/x/c", false},
		{"*.go", "deep/down/x.go", false},
		{"src/*.ts", "src/a/b.ts", false},
	} {
		if got, _ := matchPath(tc.glob, tc.path); got != tc.want {
			t.Errorf("matchGlob(%q, %q) = %v", tc.glob, tc.path, got)
		}
	}
}

// Only the tools that change nothing may be run again when a conversation
// is recovered: a second write or edit would be a second change.
// Only the tools that read may run again, and only they are read-only
// (allowed by the permission policy's default, run side by side).
func TestOnlyTheToolsThatReadMayRunAgain(t *testing.T) {
	f := newFixture(t)
	want := map[string]bool{
		"workspace--read": true, "workspace--grep": true, "workspace--list": true, "workspace--glob": true,
		"workspace--write": false, "workspace--edit": false,
	}
	tools := f.ws.Tools()
	if len(tools) != len(want) {
		t.Fatalf("%d workspace tools; the table names %d: a new tool must be decided here", len(tools), len(want))
	}
	for _, tl := range tools {
		rerun, ok := want[tl.Name]
		if !ok {
			t.Fatalf("%s is not in the table: decide whether it may run again", tl.Name)
		}
		if tl.Rerun != rerun || tl.ReadOnly != rerun {
			t.Errorf("%s: Rerun = %v, ReadOnly = %v, want both %v", tl.Name, tl.Rerun, tl.ReadOnly, rerun)
		}
	}
}
