//go:build linux

package child

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/skipped"
)

// /proc not readable (out of file descriptors) says the command runs:
// Wait, finding its supervisor stopped, continues it and never kills the
// command. The command stops its supervisor only after Start returned (a
// "go" file), so the stop is Wait's to find, never Start's to continue.
func TestWaitLeavesARunningCommandWhoseProcCannotBeRead(t *testing.T) {
	defer func(r func(string) ([]byte, error)) { readProc = r }(readProc)
	readProc = func(name string) ([]byte, error) {
		if strings.HasPrefix(name, "/proc/") {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
		}
		return os.ReadFile(name)
	}
	g, cmd, dir := startScript(t, `echo > started; while [ ! -e go ]; do sleep 0.01; done; kill -STOP $PPID; sleep 0.5; echo > last; exit 4`)
	defer g.Kill()
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, waitEnded(t, g, cmd), 4)
	if !exists(filepath.Join(dir, "last")) {
		t.Fatal("Wait killed the command, /proc not readable, before it wrote its last file")
	}
}

// The command exits leaving two loops that stop its supervisor again and
// again (orphans below it), and /proc cannot be read (EMFILE) for all
// the wait: Wait still returns, the continued supervisor killing them.
func TestWaitEndsWithStopLoopsLeftAndProcUnreadable(t *testing.T) {
	defer func(r func(string) ([]byte, error)) { readProc = r }(readProc)
	g, cmd, dir := startScript(t, `echo > started; sup=$PPID; while [ ! -e go ]; do sleep 0.01; done; f(){ while :; do kill -STOP $sup; done; }; f & f & sleep 0.2; exit 3`)
	defer g.Kill()
	readProc = func(name string) ([]byte, error) {
		if strings.HasPrefix(name, "/proc/") {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
		}
		return os.ReadFile(name)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		var held *HeldError
		if !errors.As(err, &held) {
			wantExit(t, err, 3)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("Wait has not returned 15 s after the command exited (supervisor %d)", cmd.Process.Pid)
		g.Kill()
		<-done
	}
}

// Kill, called while Wait waits, returns even when cmd.Wait (which Wait
// calls to reap) waits on an I/O copy of its own — a Stdin that is not an
// *os.File, whose Read blocks: exec.Cmd.Wait waits for its copying
// goroutine after the process has exited (golang/go#23019; WaitDelay
// bounds it, unset here). Wait reaped holding g.mu, and Kill waited for
// g.mu as long as that copy.
func TestKillReturnsWhileWaitsReapWaitsOnAStdinCopy(t *testing.T) {
	stdin, feed := io.Pipe() // never written to, closed at the test's end
	defer feed.Close()
	cmd := exec.Command("true")
	cmd.Stdin = stdin
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- g.Wait() }()
	time.Sleep(500 * time.Millisecond) // `true` has exited; Wait is in cmd.Wait, on the stdin copy
	killed := make(chan struct{})
	go func() { g.Kill(); close(killed) }()
	select {
	case <-killed:
	case <-time.After(5 * time.Second):
		t.Errorf("Kill has not returned 5 s after it was called: it waits for g.mu, held by Wait's reap in cmd.Wait")
	}
	feed.Close() // lets cmd.Wait's stdin copy, then Wait, then Kill end
	<-waited
	<-killed
}

// Signal's "a Kill begun meanwhile ends the wait": the supervisor held
// by a debugger (a ptrace stop, which SIGCONT does not end and stopped()
// does not see) with its control pipe full, Signal waits holding g.mu; a
// Kill then begun (it sets killing before it waits for g.mu) makes
// Signal return, and Kill ends the supervisor.
func TestKillEndsASignalWaitingOnAHeldSupervisor(t *testing.T) {
	defer func(k time.Duration) { killWait = k }(killWait)
	killWait = 300 * time.Millisecond
	g, cmd, _ := startScript(t, `echo > started; sleep 30`)
	defer g.Kill()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no python3 on PATH; .ci/run installs it")
		}
		skipped.Need(t, "python3", "apt-get install python3")
	}
	tracer := exec.Command("python3", "-c", `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
if libc.ptrace(16, pid, None, None) != 0: sys.exit("attach: %d" % ctypes.get_errno())
os.waitpid(pid, 0x40000000)
print("held", flush=True)
time.sleep(60)
`, strconv.Itoa(cmd.Process.Pid))
	out, err := tracer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tracer.Start(); err != nil {
		t.Fatal("python3:", err)
	}
	defer func() { _ = tracer.Process.Kill(); _ = tracer.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Skipf("no ptrace here: %q", line)
	}
	fillControlPipe(t, g)
	signalled := make(chan error, 1)
	go func() { signalled <- g.Signal(syscall.SIGTERM) }()
	select {
	case err := <-signalled:
		t.Fatalf("Signal returned (%v) with the pipe full and the supervisor held", err)
	case <-time.After(300 * time.Millisecond):
	}
	killed := make(chan struct{})
	go func() { g.Kill(); close(killed) }()
	for _, c := range []struct {
		what string
		ch   <-chan struct{}
	}{{"Signal", waitDone(signalled)}, {"Kill", killed}} {
		select {
		case <-c.ch:
		case <-time.After(5 * time.Second):
			_ = tracer.Process.Kill()
			t.Fatalf("%s has not returned 5 s after Kill began", c.what)
		}
	}
}
