package shell

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/workspace"
)

func TestOutputGoesToAFileInsideTheWorkspacesMyelinDir(t *testing.T) {
	dir := t.TempDir()
	text, _ := run(t, dir, "readlink /proc/$$/fd/1", 0)
	got := strings.TrimSpace(text)
	want, _ := filepath.EvalSymlinks(filepath.Join(dir, OutputDir))
	if filepath.Dir(got) != want || !strings.HasSuffix(got, ".out") {
		t.Fatalf("the command wrote to %q, want a file in %q", got, want)
	}
	if entries, _ := os.ReadDir(want); len(entries) != 0 {
		t.Fatalf("the conversion left %v", entries)
	}
}

func TestABigOutputBecomesTheSpillFileAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	r, err := RunWithPolicy(context.Background(), dir, testPolicy, Input{Command: "seq 1 300000; exit 2"})
	if err != nil {
		t.Fatal(err)
	}
	out := result.One(result.Call{ID: "big", Result: r}, result.Env{Store: ws})
	if !out.IsError || out.SpillPath == "" || !strings.HasPrefix(out.Text, "1\n2\n3\n") {
		t.Fatalf("got error %v, spill %q, text %.200q", out.IsError, out.SpillPath, out.Text)
	}
	spilled, err := os.ReadFile(filepath.Join(dir, out.SpillPath))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(spilled), "299999\n300000\n[exit status 2]") || strings.Count(string(spilled), "\n") != 300000 {
		t.Fatalf("the spill file holds %d lines, ending %q", strings.Count(string(spilled), "\n"), spilled[max(0, len(spilled)-40):])
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, OutputDir)); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
}

func TestStartCleansOutputsNoLiveProcessHolds(t *testing.T) {
	dir := t.TempDir()
	live, err := outputFile(dir) // locked, as a running command's is
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	stale := filepath.Join(dir, OutputDir, "0123456789abcdef.out") // what a killed process left: no lock
	other := filepath.Join(dir, OutputDir, "notes.txt")
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, []byte("left over"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Tool(dir)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale output is still there: %v", err)
	}
	for _, p := range []string{live.Name(), other} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed: %v", p, err)
		}
	}
}

func TestWithoutAWorkspaceDirTheOutputGoesToTheTempDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	f, err := outputFile("")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if filepath.Dir(f.Name()) != filepath.Clean(os.TempDir()) {
		t.Fatalf("output file %s", f.Name())
	}
}

func TestAnOutputNobodyConvertsIsRemovedOnceUnreachable(t *testing.T) {
	dir := t.TempDir()
	r, err := RunWithPolicy(context.Background(), dir, testPolicy, Input{Command: "echo dropped"})
	if err != nil {
		t.Fatal(err)
	}
	name := r.Data.(result.TextFile).Path
	if _, err := os.Stat(name); err != nil {
		t.Fatalf("the output file is not there before it is dropped: %v", err)
	}
	r = result.Result{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the dropped output file is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 10 §2: the output directory was made and read by plain path, so a
// link planted at .myelin/shell made commands write their output where it
// led, and the clean-up at start removed the *.out files it found there.
func TestALinkedOutputDirIsRefusedAndNotCleaned(t *testing.T) {
	for _, link := range []string{".myelin", OutputDir} {
		t.Run(link, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			victim := filepath.Join(outside, "0123456789abcdef.out")
			if err := os.WriteFile(victim, []byte("someone's file"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(link)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
			Tool(dir) // cleans the outputs left over
			if _, err := os.Stat(victim); err != nil {
				t.Fatalf("the clean-up removed a file the link leads to: %v", err)
			}
			_, err := RunWithPolicy(context.Background(), dir, testPolicy, Input{Command: "echo hello"})
			var le *workspace.OwnLinkError
			if !errors.As(err, &le) || le.Path != filepath.Join(dir, link) {
				t.Fatalf("Run = %v; want an error naming %s as a symbolic link", err, link)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 1 {
				t.Fatalf("the command wrote where the link leads: %v", entries)
			}
		})
	}
}
