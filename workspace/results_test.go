package workspace_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/myelin-run/myelin/workspace"
)

func TestResultPathsFindsTheFilesATextNames(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"a spill notice", "[output 12 KB; whole in .myelin/tool-results/2026-12-05-call_1.txt]", []string{".myelin/tool-results/2026-12-05-call_1.txt"}},
		{"a sentence's final dot is not the name's", "Saved to .myelin/tool-results/a-1.png.", []string{".myelin/tool-results/a-1.png"}},
		{"each once, in order", "see .myelin/tool-results/b.txt and .myelin/tool-results/a.txt, then .myelin/tool-results/b.txt", []string{".myelin/tool-results/b.txt", ".myelin/tool-results/a.txt"}},
		{"quoted in JSON", `{"path":".myelin/tool-results/x.txt"}`, []string{".myelin/tool-results/x.txt"}},
		{"a directory below is not a file of it", ".myelin/tool-results/sub/x.txt", nil},
		{"the directory alone names no file", "files go to .myelin/tool-results/ and stay", nil},
		{"no path", "nothing here", nil},
	} {
		if got := workspace.ResultPaths(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ResultPaths(%q) = %q; want %q", tc.name, tc.text, got, tc.want)
		}
	}
}

func TestRemoveResultRemovesOnlyRegularFilesOfTheResultsDirectory(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, ".myelin", "tool-results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "precious.txt")
	for p, data := range map[string]string{filepath.Join(results, "spill.txt"): "spill", filepath.Join(dir, "main.go"): "code", outside: "precious"} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(results, "link.txt")); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	files, err := ws.ResultFiles()
	if err != nil || len(files) != 2 || files[0].Path != ".myelin/tool-results/link.txt" || files[0].Regular || !files[1].Regular || files[1].Size != 5 {
		t.Fatalf("ResultFiles = %+v, %v; want the link (not regular) and spill.txt (5 bytes)", files, err)
	}
	if err := ws.RemoveResult(".myelin/tool-results/spill.txt"); err != nil {
		t.Fatalf("removing a spill file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(results, "spill.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the spill file is still there: %v", err)
	}
	if err := ws.RemoveResult(".myelin/tool-results/spill.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removing it again: %v; want fs.ErrNotExist", err)
	}
	for _, p := range []string{".myelin/tool-results/link.txt", "main.go", ".myelin/tool-results/../../main.go", "/etc/passwd", ".myelin/tool-results"} {
		if err := ws.RemoveResult(p); err == nil {
			t.Errorf("RemoveResult(%q) removed it; want it refused", p)
		}
	}
	for _, p := range []string{outside, filepath.Join(dir, "main.go"), filepath.Join(results, "link.txt")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
}

func TestRemoveResultRefusesALinkedResultsDirectory(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".myelin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// a link inside the workspace's reach: os.Root would follow it
	inside := filepath.Join(dir, "elsewhere")
	if err := os.Rename(elsewhere, inside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../elsewhere", filepath.Join(dir, ".myelin", "tool-results")); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var link *workspace.OwnLinkError
	if err := ws.RemoveResult(".myelin/tool-results/x.txt"); !errors.As(err, &link) {
		t.Errorf("RemoveResult through a linked results directory: %v; want an OwnLinkError", err)
	}
	if _, err := ws.ResultFiles(); !errors.As(err, &link) {
		t.Errorf("ResultFiles of a linked results directory: %v; want an OwnLinkError", err)
	}
	if _, err := os.Stat(filepath.Join(inside, "x.txt")); err != nil {
		t.Errorf("the file behind the link is gone: %v", err)
	}
}
