package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 10 §2: myelin's own files were opened by plain path, so a link
// planted among them made myelin write where it led.
func TestOwnFilesRefuseSymbolicLinks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, ws, outside string)
		open  string // the file OpenOwn is asked for
		named string // the path the error must name, relative to ws
	}{
		{"the .myelin directory", func(t *testing.T, ws, outside string) {
			symlink(t, outside, filepath.Join(ws, ".myelin"))
		}, ".myelin/logs/trace.log", ".myelin"},
		{"the logs directory", func(t *testing.T, ws, outside string) {
			mkdir(t, filepath.Join(ws, ".myelin"))
			symlink(t, outside, filepath.Join(ws, ".myelin/logs"))
		}, ".myelin/logs/trace.log", ".myelin/logs"},
		{"the file", func(t *testing.T, ws, outside string) {
			mkdir(t, filepath.Join(ws, ".myelin/logs"))
			symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(ws, ".myelin/logs/trace.log"))
		}, ".myelin/logs/trace.log", ".myelin/logs/trace.log"},
		{"a link to a file inside the workspace", func(t *testing.T, ws, outside string) {
			mkdir(t, filepath.Join(ws, ".myelin/logs"))
			if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("notes\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			symlink(t, "../../notes.txt", filepath.Join(ws, ".myelin/logs/trace.log"))
		}, ".myelin/logs/trace.log", ".myelin/logs/trace.log"},
		{"a dangling link", func(t *testing.T, ws, outside string) {
			mkdir(t, filepath.Join(ws, ".myelin/logs"))
			symlink(t, filepath.Join(outside, "new.txt"), filepath.Join(ws, ".myelin/logs/trace.log"))
		}, ".myelin/logs/trace.log", ".myelin/logs/trace.log"},
		{"a file where a directory goes", func(t *testing.T, ws, outside string) {
			if err := os.WriteFile(filepath.Join(ws, ".myelin"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, ".myelin/logs/trace.log", ".myelin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.plant(t, f.dir, f.outside)
			_, err := OpenOwn(f.dir, tc.open, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			var le *OwnLinkError
			if !errors.As(err, &le) || le.Path != filepath.Join(f.dir, tc.named) || !strings.Contains(err.Error(), le.Path) {
				t.Fatalf("OpenOwn(%s) = %v; want an OwnLinkError naming %s", tc.open, err, tc.named)
			}
			if tc.named == tc.open || strings.HasPrefix(tc.open, tc.named+"/") {
				if cerr := CheckOwnFile(f.dir, tc.open); cerr == nil || cerr.Error() != err.Error() {
					t.Errorf("CheckOwnFile = %v; want %v", cerr, err)
				}
			}
			f.assertOutsideUntouched(t)
			if b, err := os.ReadFile(filepath.Join(f.dir, "notes.txt")); err == nil && string(b) != "notes\n" {
				t.Errorf("notes.txt was written: %q", b)
			}
		})
	}
}

func TestOwnFilesAreMadeWhenMissing(t *testing.T) {
	f := newFixture(t)
	if err := CheckOwn(f.dir); err != nil {
		t.Fatalf("CheckOwn on a workspace without .myelin: %v", err)
	}
	file, err := OpenOwn(f.dir, ".myelin/logs/trace.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteString("a line\n"); err != nil {
		t.Fatal(err)
	}
	file.Close()
	if b, _ := os.ReadFile(filepath.Join(f.dir, ".myelin/logs/trace.log")); string(b) != "a line\n" {
		t.Fatalf("trace.log holds %q", b)
	}
	if err := CheckOwn(f.dir); err != nil {
		t.Fatalf("CheckOwn: %v", err)
	}
}

func TestCheckOwnRefusesEachLinkedDirectory(t *testing.T) {
	for _, d := range OwnDirs {
		t.Run(d, func(t *testing.T) {
			f := newFixture(t)
			mkdir(t, filepath.Join(f.dir, filepath.Dir(d)))
			symlink(t, f.outside, filepath.Join(f.dir, d))
			err := CheckOwn(f.dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(f.dir, d)+" is a symbolic link (to "+f.outside+")") {
				t.Fatalf("CheckOwn = %v", err)
			}
		})
	}
}

// A spill file went through the workspace's root, which follows a link
// that stays inside: .myelin/tool-results -> src put spills among the
// user's sources.
func TestSpillRefusesALinkedResultsDirectory(t *testing.T) {
	f := newFixture(t)
	mkdir(t, filepath.Join(f.dir, ".myelin"))
	mkdir(t, filepath.Join(f.dir, "src"))
	symlink(t, "../src", filepath.Join(f.dir, ResultsDir))
	_, err := f.ws.Save("x.txt", "spilled")
	if err == nil || !strings.Contains(err.Error(), "is a symbolic link (to ../src)") {
		t.Fatalf("Save = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(f.dir, "src")); len(entries) != 0 {
		t.Fatalf("a spill went into src: %v", entries)
	}
}

func TestLogRotatesOnceOverItsCap(t *testing.T) {
	f := newFixture(t)
	l, err := OpenLog(f.dir, ".myelin/logs/mcp-x.log", 100)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 29) + "\n" // 30 bytes
	for i := 0; i < 50; i++ {
		if n, err := l.Write([]byte(line)); err != nil || n != len(line) {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
	}
	if n, err := l.Write([]byte(strings.Repeat("y", 1000))); err != nil || n != 1000 {
		t.Fatalf("a write over the cap: %d, %v", n, err)
	}
	l.Close()
	p := filepath.Join(f.dir, ".myelin/logs/mcp-x.log")
	cur, _ := os.ReadFile(p)
	old, _ := os.ReadFile(p + ".1")
	if string(cur) != strings.Repeat("y", 100) || string(old) != strings.Repeat(line, 2) {
		t.Fatalf("log %q, .1 %q", cur, old)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 2 {
		t.Fatalf("the logs directory holds %d files, want the log and .1", len(entries))
	}
	// opened again over its cap, it rotates at once
	l, err = OpenLog(f.dir, ".myelin/logs/mcp-x.log", 100)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Size() != 0 {
		t.Fatalf("reopened over its cap: size %d", l.Size())
	}
}

func TestLogRotationRemovesALinkedOldLog(t *testing.T) {
	f := newFixture(t)
	mkdir(t, filepath.Join(f.dir, ".myelin/logs"))
	symlink(t, filepath.Join(f.outside, "secret.txt"), filepath.Join(f.dir, ".myelin/logs/trace.log.1"))
	l, err := OpenLog(f.dir, ".myelin/logs/trace.log", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 3; i++ {
		if _, err := l.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	f.assertOutsideUntouched(t)
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}
