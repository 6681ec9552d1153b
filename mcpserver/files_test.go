package mcpserver

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/myelin-run/myelin/result"
)

// A workspace name that is not a regular file — a named pipe, a socket,
// a device — is refused when read as a resource, before it is opened,
// with an error saying what it is: opening a named pipe would wait for a
// writer forever, and cancelling the read does not end that wait. The
// server answers the next read after it.
func TestAResourceReadOfANamedPipeOrSocketIsRefusedWithoutOpeningIt(t *testing.T) {
	ws := openWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "ok.txt"), []byte("fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // name → what the error must call it
	fifo := filepath.Join(ws.Dir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("making a named pipe: %v", err)
	}
	names["pipe"] = "named pipe"
	// a unix socket's path is short (108 bytes): made where it fits
	if l, err := net.Listen("unix", filepath.Join(ws.Dir(), "sock")); err == nil {
		t.Cleanup(func() { l.Close() })
		names["sock"] = "socket"
	} else {
		t.Logf("no socket case: %v", err)
	}
	// a device (a copy of /dev/null's numbers) when this user may make one
	if err := syscall.Mknod(filepath.Join(ws.Dir(), "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		names["null"] = "character device"
	} else {
		t.Logf("no device case: %v", err)
	}
	s := New(Config{Workspace: ws, Env: result.Env{Store: ws, Limits: result.Limits{Agent: 1000}}})
	cs := connectAt(t, s, nil, hostVersion)
	// should a read open the pipe and wait, this writer-less end lets it
	// go when the test ends, so that the failure is reported, not hung
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	for name, kind := range names {
		_, err := read(cs, fileURI(ws.Dir(), name))
		if err == nil || !strings.Contains(err.Error(), kind) {
			t.Errorf("reading %s gave %v, want a refusal saying it is a %s", name, err, kind)
		}
	}
	if got := readText(t, cs, fileURI(ws.Dir(), "ok.txt")); got != "fine\n" {
		t.Errorf("after them, ok.txt read as %q, want its text", got)
	}
}
