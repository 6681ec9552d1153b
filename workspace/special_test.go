package workspace

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// specialFiles makes, in dir, a named pipe, a socket, a character device
// (when the test may: it needs root) and a link to the pipe, and returns
// their names with what the tools call them.
func specialFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	made := map[string]string{}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	made["pipe"] = "a named pipe (FIFO)"
	if err := os.Symlink("pipe", filepath.Join(dir, "pipe-link")); err != nil {
		t.Fatal(err)
	}
	made["pipe-link"] = "a named pipe (FIFO)"
	t.Chdir(dir) // a socket's path is bounded to 108 bytes: make it relative
	l, err := net.Listen("unix", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	made["sock"] = "a socket"
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		made["null"] = "a character device"
	}
	return made
}

// Issue 10 §6: a named pipe given to grep as path blocked it until the
// dispatcher's timeout (run with -timeout to see it), and the blocked thread
// stayed. Every tool refuses a named pipe, a socket or a device before it
// opens it, saying what it is.
func TestToolsRefuseNamedPipesSocketsAndDevicesBeforeOpeningThem(t *testing.T) {
	f := newFixture(t)
	for name, kind := range specialFiles(t, f.dir) {
		for tool, in := range map[string]map[string]any{
			"workspace--grep": {"pattern": "x", "path": name},
			"workspace--read": {"path": name},
			"workspace--list": {"path": name},
		} {
			out := f.call(t, tool, in)
			if want := name + " is " + kind + ", not a regular file or a directory"; !out.IsError || !strings.Contains(out.Text, want) {
				t.Errorf("%s on %s: %q, want an error saying %q", tool, name, out.Text, want)
			}
		}
	}
}

// A directory walk passes over named pipes, sockets and devices without
// opening them, and the footer counts them.
func TestGrepWalkPassesOverSpecialFilesAndCountsThem(t *testing.T) {
	f := newFixture(t)
	made := specialFiles(t, f.dir)
	f.write(t, "a.txt", "x marks\n")
	out := f.call(t, "workspace--grep", map[string]any{"pattern": "x"})
	if out.IsError || !strings.HasPrefix(out.Text, "a.txt:1:x marks\n") {
		t.Fatalf("%q", out.Text)
	}
	var rep GrepReport
	if err := json.Unmarshal(out.Structured, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.PassedOver) != len(made) || rep.FilesRead != 1 {
		t.Fatalf("passed over %q, read %d files; want %d passed over", rep.PassedOver, rep.FilesRead, len(made))
	}
	for _, p := range rep.PassedOver {
		name, _, _ := strings.Cut(p, " ")
		if want := name + " (" + made[name] + ", not opened)"; p != want {
			t.Errorf("passed over %q, want %q", p, want)
		}
	}
	if !strings.Contains(out.Text, "passed over "+itoa(len(made))+" files: ") {
		t.Fatalf("footer %q", out.Text)
	}
}

// workspace--list names what a special file is instead of a size, and does
// not open it.
func TestListSaysWhatASpecialFileIs(t *testing.T) {
	f := newFixture(t)
	specialFiles(t, f.dir)
	out := f.call(t, "workspace--list", map[string]any{})
	for _, want := range []string{"pipe\ta named pipe (FIFO)\n", "pipe-link -> pipe\n", "sock\ta socket"} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("list %q lacks %q", out.Text, want)
		}
	}
	if !strings.Contains(string(out.Structured), `{"name":"pipe","type":"other","size":0,"kind":"a named pipe (FIFO)"}`) {
		t.Errorf("structured %s", out.Structured)
	}
}

func itoa(n int) string {
	raw, _ := json.Marshal(n)
	return string(raw)
}
