package sandbox_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/myelin-run/myelin/sandbox"
)

// helperEnv makes this test binary, run as a sandboxed command, do one
// thing and say how it went (helper), instead of running the tests.
const helperEnv = "MYELIN_TEST_SANDBOX_HELPER"

func TestMain(m *testing.M) {
	if v := os.Getenv(helperEnv); v != "" {
		fmt.Println(helper(v))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper does what v says: "connect:PATH" connects to the Unix socket at
// PATH and reads what it sends, "socketpair" makes a pair of Unix
// sockets, "io_uring" sets an io_uring up.
func helper(v string) string {
	switch {
	case strings.HasPrefix(v, "connect:"):
		c, err := net.Dial("unix", strings.TrimPrefix(v, "connect:"))
		if err != nil {
			return "refused: " + err.Error()
		}
		defer c.Close()
		b := make([]byte, 5)
		n, _ := c.Read(b)
		return "connected: " + string(b[:n])
	case v == "socketpair":
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			return "refused: " + err.Error()
		}
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return "made"
	case v == "x32":
		// getpid by its x32 number: x86_64's number with __X32_SYSCALL_BIT
		_, _, e := syscall.RawSyscall(0x40000000|syscall.SYS_GETPID, 0, 0, 0)
		if e != 0 {
			return "refused: " + e.Error()
		}
		return "made"
	case v == "io_uring":
		var params [120]byte // struct io_uring_params
		fd, _, e := syscall.RawSyscall(425 /* io_uring_setup */, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			return "refused: " + e.Error()
		}
		syscall.Close(int(fd))
		return "made"
	}
	return "unknown helper " + v
}

// runHelper runs this test binary confined by p in ws, doing what v says.
func runHelper(t *testing.T, p sandbox.Policy, ws, v string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	got, code := run(t, p, ws, helperEnv+"='"+v+"' '"+exe+"'")
	if code != 0 {
		t.Fatalf("the helper %q exited %d: %q", v, code, got)
	}
	return strings.TrimSpace(got)
}

// A path Unix socket leads to a daemon outside the sandbox (Docker's is
// the host's root): without the network a command may not connect to
// one; with the network, or the sandbox off, it may. A pair of sockets
// reaches nothing outside and stays allowed.
func TestACommandWithoutTheNetworkCannotConnectToAUnixSocketOutside(t *testing.T) {
	w := newWorld(t)
	dir, err := os.MkdirTemp("", "us") // short: a socket's path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "daemon.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	got := runHelper(t, sandbox.Policy{}, w.ws, "connect:"+sock)
	if !strings.HasPrefix(got, "refused: ") || !strings.Contains(got, "operation not permitted") {
		t.Errorf("without the network, connecting to %s: %q, want refused with operation not permitted", sock, got)
	}
	if got := runHelper(t, sandbox.Policy{Mode: sandbox.ReadOnly}, w.ws, "connect:"+sock); !strings.HasPrefix(got, "refused: ") {
		t.Errorf("read-only without the network, connecting to %s: %q, want refused", sock, got)
	}
	for _, c := range []struct {
		name string
		p    sandbox.Policy
	}{{"with Network", sandbox.Policy{Network: true}}, {"with Mode Off", off}} {
		if got := runHelper(t, c.p, w.ws, "connect:"+sock); got != "connected: hello" {
			t.Errorf("%s, connecting to %s: %q, want connected: hello", c.name, sock, got)
		}
	}
	if got := runHelper(t, sandbox.Policy{}, w.ws, "socketpair"); got != "made" {
		t.Errorf("without the network, socketpair: %q, want made", got)
	}
}

// An io_uring makes sockets past seccomp: without the network a command
// may not set one up.
func TestACommandWithoutTheNetworkCannotSetUpAnIoUring(t *testing.T) {
	w := newWorld(t)
	if got := runHelper(t, off, w.ws, "io_uring"); got != "made" {
		t.Skipf("this kernel does not let a process set an io_uring up even unconfined: %s", got)
	}
	if got := runHelper(t, sandbox.Policy{}, w.ws, "io_uring"); got != "refused: operation not permitted" {
		t.Errorf("without the network, io_uring_setup: %q, want refused: operation not permitted", got)
	}
	if got := runHelper(t, sandbox.Policy{Network: true}, w.ws, "io_uring"); got != "made" {
		t.Errorf("with Network, io_uring_setup: %q, want made", got)
	}
}

// x32's system calls share x86_64's audit arch, with their own numbers:
// the filter refuses them all, or they would pass its checks by number.
func TestACommandWithoutTheNetworkCannotMakeX32SystemCalls(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 is x86_64's")
	}
	w := newWorld(t)
	if got := runHelper(t, sandbox.Policy{}, w.ws, "x32"); got != "refused: operation not permitted" {
		t.Errorf("without the network, an x32 getpid: %q, want refused: operation not permitted", got)
	}
	got := runHelper(t, sandbox.Policy{Network: true}, w.ws, "x32")
	if got != "made" && got != "refused: function not implemented" {
		t.Errorf("with Network, an x32 getpid: %q, want made, or refused as not implemented by a kernel without x32", got)
	}
}
