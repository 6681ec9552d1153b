package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The attack of issue 10 §1: a write that becomes a command (.mcp.json,
// .git/config) or rewrites myelin's own history.
func TestFileToolsRefuseToWriteWhatDecidesWhatRuns(t *testing.T) {
	for _, p := range []string{
		".mcp.json", ".MCP.json",
		".myelin/history.db", ".myelin/tool-results/x.txt", ".Myelin/new",
		".git/config", ".git", "sub/.git/hooks/pre-commit", "sub/.GIT/config",
	} {
		t.Run(p, func(t *testing.T) {
			f := newFixture(t)
			out := f.call(t, "workspace--write", WriteInput{Path: p, Content: `{"mcpServers":{"x":{"command":"sh"}}}`})
			if !out.IsError || !strings.Contains(out.Text, "may not be written") {
				t.Fatalf("write %s: %q", p, out.Text)
			}
			if _, err := os.Lstat(filepath.Join(f.dir, p)); err == nil {
				t.Fatalf("write %s made the file", p)
			}
		})
	}
}

func TestFileToolsMayWriteLookalikesElsewhere(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"sub/.mcp.json", "sub/.myelin/notes", ".gitignore", "a.git/x", ".github/workflows/ci.yml"} {
		if out := f.call(t, "workspace--write", WriteInput{Path: p, Content: "ok"}); out.IsError {
			t.Fatalf("write %s: %q", p, out.Text)
		}
	}
}

func TestEditRefusesProtectedFilesAndLeavesThemAsTheyWere(t *testing.T) {
	f := newFixture(t)
	f.write(t, ".mcp.json", `{"mcpServers":{}}`)
	f.write(t, ".git/config", "[core]\n")
	for _, p := range []string{".mcp.json", ".git/config"} {
		out := f.call(t, "workspace--edit", EditInput{Path: p, OldString: "{}", NewString: `{"x":{"command":"sh"}}`, ReplaceAll: true})
		if !out.IsError || !strings.Contains(out.Text, "may not be written") {
			t.Fatalf("edit %s: %q", p, out.Text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, ".mcp.json")); string(b) != `{"mcpServers":{}}` {
		t.Fatalf(".mcp.json is now %q", b)
	}
	// reading them stays allowed
	if out := f.call(t, "workspace--read", ReadInput{Path: ".mcp.json"}); out.IsError {
		t.Fatalf("read .mcp.json: %q", out.Text)
	}
}

func TestWriteThroughASymlinkToAProtectedFileIsRefused(t *testing.T) {
	f := newFixture(t)
	f.write(t, ".git/config", "[core]\n")
	for link, target := range map[string]string{"innocent.json": ".mcp.json", "cfg": ".git/config", "g": ".git", "m": ".myelin"} {
		if err := os.Symlink(target, filepath.Join(f.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"innocent.json", "cfg", "g/config", "m/history.db"} {
		out := f.call(t, "workspace--write", WriteInput{Path: p, Content: "[core]\nfsmonitor = id > ../pwned\n"})
		if !out.IsError || !strings.Contains(out.Text, "leads to") {
			t.Fatalf("write %s: %q", p, out.Text)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, ".git/config")); string(b) != "[core]\n" {
		t.Fatalf(".git/config is now %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".mcp.json")); err == nil {
		t.Fatal("a write through a symbolic link made .mcp.json")
	}
}

func TestWriteToAHardLinkOfAProtectedFileLeavesTheProtectedFileAlone(t *testing.T) {
	f := newFixture(t)
	f.write(t, ".git/config", "[core]\n")
	if err := os.Link(filepath.Join(f.dir, ".git/config"), filepath.Join(f.dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if out := f.call(t, "workspace--write", WriteInput{Path: "notes.txt", Content: "[core]\nfsmonitor = touch ../pwned\n"}); out.IsError {
		t.Fatalf("write: %q", out.Text)
	}
	out := f.call(t, "workspace--edit", EditInput{Path: "notes.txt", OldString: "touch", NewString: "rm"})
	if out.IsError {
		t.Fatalf("edit: %q", out.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, ".git/config")); string(b) != "[core]\n" {
		t.Fatalf(".git/config was written through a hard link: %q", b)
	}
}

// TestWriteKeepsAnExistingFilesPermissions: a write and an edit leave the
// file's mode exactly as it was, bits the umask would take off a new file
// (0777, 0666 under the usual 022) included, and no temporary file.
func TestWriteKeepsAnExistingFilesPermissions(t *testing.T) {
	for _, mode := range []os.FileMode{0o750, 0o777, 0o666} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFixture(t)
			p := filepath.Join(f.dir, "run.sh")
			if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil { // past the umask
				t.Fatal(err)
			}
			f.call(t, "workspace--write", WriteInput{Path: "run.sh", Content: "#!/bin/sh\necho hi\n"})
			f.call(t, "workspace--edit", EditInput{Path: "run.sh", OldString: "hi", NewString: "ho"})
			if b, _ := os.ReadFile(p); string(b) != "#!/bin/sh\necho ho\n" {
				t.Fatalf("file holds %q", b)
			}
			st, err := os.Stat(p)
			if err != nil || st.Mode().Perm() != mode {
				t.Fatalf("mode %v, %v, want %v", st.Mode(), err, mode)
			}
			if entries, _ := os.ReadDir(f.dir); len(entries) != 1 {
				t.Fatalf("a temporary file was left: %v", entries)
			}
		})
	}
}

// Issue 10 §6: a FIFO hung workspace--write until the dispatcher's timeout,
// and a write into a device node reported success.
func TestWriteAndEditRefuseWhatIsNotARegularFile(t *testing.T) {
	f := newFixture(t)
	if err := syscall.Mkfifo(filepath.Join(f.dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"fifo"}
	if err := syscall.Mknod(filepath.Join(f.dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		nodes = append(nodes, "null")
	} else {
		t.Logf("no device node (%v): only the FIFO is tried", err)
	}
	for _, p := range nodes {
		out := f.call(t, "workspace--write", WriteInput{Path: p, Content: "x"})
		if !out.IsError || !strings.Contains(out.Text, "not a regular file") {
			t.Fatalf("write %s: %q", p, out.Text)
		}
		out = f.call(t, "workspace--edit", EditInput{Path: p, OldString: "a", NewString: "b"})
		if !out.IsError || !strings.Contains(out.Text, "not a regular file") {
			t.Fatalf("edit %s: %q", p, out.Text)
		}
	}
}

// Writing beside and renaming over asks only the directory's permission:
// a file the user made read-only must still refuse, as it did before.
// (root may write any file, so this runs only as another user.)
func TestWriteAndEditRefuseAReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root every file is writable")
	}
	f := newFixture(t)
	p := filepath.Join(f.dir, "ro.txt")
	if err := os.WriteFile(p, []byte("keep me\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{
		f.call(t, "workspace--write", WriteInput{Path: "ro.txt", Content: "overwritten\n"}).Text,
		f.call(t, "workspace--edit", EditInput{Path: "ro.txt", OldString: "keep", NewString: "lose"}).Text,
	} {
		if !strings.Contains(out, "permission denied") {
			t.Fatalf("%q", out)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "keep me\n" {
		t.Fatalf("a read-only file became %q", b)
	}
}
