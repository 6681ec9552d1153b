package workspace

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveFileMovesAFileInsideTheWorkspaceWithoutOverwriting(t *testing.T) {
	f := newFixture(t)
	if _, err := f.ws.Save("out.txt", "taken"); err != nil {
		t.Fatal(err)
	}
	f.write(t, ".myelin/shell/1.out", "the output")
	src := filepath.Join(f.dir, ".myelin/shell/1.out")
	before, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.ws.SaveFile("out.txt", src)
	if err != nil || p != ".myelin/tool-results/out-2.txt" {
		t.Fatalf("SaveFile = %q, %v", p, err)
	}
	after, err := os.Stat(filepath.Join(f.dir, p))
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("the file was not moved (renamed): %v", err)
	}
	if _, err := os.Stat(src); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the source is still there: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, ".myelin/tool-results/out.txt")); string(got) != "taken" {
		t.Fatalf("the file of that name was overwritten: %q", got)
	}
}

func TestSaveFileCopiesAFileFromOutsideTheWorkspace(t *testing.T) {
	f := newFixture(t)
	src := filepath.Join(f.outside, "cmd.out")
	if err := os.WriteFile(src, []byte("outside output\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := f.ws.SaveFile("out.txt", src)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, p)); string(got) != "outside output\n" {
		t.Fatalf("saved %q", got)
	}
	if _, err := os.Stat(src); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the source is still there: %v", err)
	}
}

func TestSaveFileOfAMissingFileNamesItAndLeavesNothing(t *testing.T) {
	f := newFixture(t)
	_, err := f.ws.SaveFile("out.txt", filepath.Join(f.outside, "missing.out"))
	if err == nil || !strings.Contains(err.Error(), "missing.out") {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(f.dir, ResultsDir)); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
}

// failingReader yields some text, then fails.
type failingReader struct {
	sent bool
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if !r.sent {
		r.sent = true
		return copy(p, "the start of it"), nil
	}
	return 0, r.err
}

func TestSaveFromRemovesWhatItWroteWhenTheReaderFails(t *testing.T) {
	f := newFixture(t)
	stop := errors.New("the text turned out binary")
	if _, err := f.ws.SaveFrom("out.txt", &failingReader{err: stop}); !errors.Is(err, stop) {
		t.Fatalf("err = %v, want the reader's", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(f.dir, ResultsDir)); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
	p, err := f.ws.SaveFrom("out.txt", io.MultiReader(strings.NewReader("a"), strings.NewReader("b")))
	if got, _ := os.ReadFile(filepath.Join(f.dir, p)); err != nil || string(got) != "ab" {
		t.Fatalf("saved %q, %v", got, err)
	}
}
