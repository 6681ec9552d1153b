//go:build linux

package child

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// waitBound bounds how long a test lets Wait take for a command that has
// ended: Wait notices a stopped supervisor within a poll or two (20 ms
// each), so only a Wait that waits on a stopped supervisor for good (or
// for the call's timeout, minutes) runs it out.
const waitBound = 5 * time.Second

// waitEnded calls g.Wait and returns what it said; if it has not returned
// within waitBound the test fails, and the supervisor is continued until
// it has, so that nothing is left behind.
func waitEnded(t *testing.T, g *Group, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitBound):
	}
	t.Errorf("Wait has not returned %v after the command ended (its supervisor stopped)", waitBound)
	g.Kill()
	return <-done
}

// wantExit fails the test unless err is an *exec.ExitError of exit
// status code.
func wantExit(t *testing.T, err error, code int) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Wait: %v, want exit status %d", err, code)
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Exited() || ws.ExitStatus() != code {
		t.Fatalf("Wait: %v, want exit status %d", err, code)
	}
}

// A command that stops its supervisor (SIGSTOP to its parent) after Start
// returned and then exits: the stopped supervisor never reports its end,
// and Wait waited until the caller gave up (shell--run's timeout, two
// minutes by default). Wait continues it, and returns the command's exit
// status.
func TestWaitReturnsWhenTheCommandStopsItsSupervisorAndExits(t *testing.T) {
	g, cmd, dir := startScript(t, `echo > started; while [ ! -e go ]; do sleep 0.01; done; kill -STOP $PPID; exit 3`)
	defer g.Kill()
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, waitEnded(t, g, cmd), 3)
}

// What the command left running stops the supervisor over and over once
// the command has exited (eight loops of kill -STOP): Wait kills every
// process below the stopped supervisor — the command has ended, so they
// are to go anyway — and continues it, and returns the command's exit
// status; nothing is left. (Continued alone, the supervisor gets there
// too here, a little later: the test holds Wait to the end, not to the
// way.)
func TestWaitEndsWhatKeepsStoppingTheSupervisorAfterTheCommandExited(t *testing.T) {
	g, cmd, dir := startScript(t, `sleep 300 & echo $! > grandchild; echo > started; while [ ! -e go ]; do sleep 0.01; done; f(){ while :; do kill -STOP $sup; done; }; sup=$PPID; for i in 1 2 3 4 5 6 7 8; do f & done; exit 5`)
	defer g.Kill()
	pid := readPids(t, dir)["grandchild"]
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, waitEnded(t, g, cmd), 5)
	if alive(pid, pid) {
		t.Fatalf("the grandchild %d outlived Wait", pid)
	}
	if kids := children(t); len(kids) > 0 {
		t.Fatalf("processes %v left after Wait", kids)
	}
}

// A command that stops its supervisor and goes on running: Wait continues
// the supervisor and waits for the command's end, never reporting it
// before (the file the command writes as its last act is there when Wait
// returns).
func TestWaitDoesNotReportACommandThatStoppedItsSupervisorBeforeItEnds(t *testing.T) {
	g, cmd, dir := startScript(t, `echo > started; kill -STOP $PPID; sleep 0.3; echo > last; exit 4`)
	defer g.Kill()
	wantExit(t, waitEnded(t, g, cmd), 4)
	if !exists(filepath.Join(dir, "last")) {
		t.Fatal("Wait returned before the command wrote its last file")
	}
}

// A supervisor held stopped where SIGCONT does not continue it (here a
// debugger's: the test traces it, and stops it with SIGSTOP through
// ptrace, a stop that only its tracer ends; the tracer, a thread of this
// process, leaves the stop's report for Wait to see) once its command
// has exited, with a child of its own left: Wait kills the child, and
// after killWait the supervisor, and says how the command ended, from
// its zombie in /proc, in a *HeldError.
func TestWaitEndsASupervisorHeldStoppedAfterTheCommandExited(t *testing.T) {
	defer func(k time.Duration) { killWait = k }(killWait)
	killWait = 300 * time.Millisecond
	g, cmd, dir := startScript(t, `sleep 300 & echo $! > grandchild; echo > started; while [ ! -e go ]; do sleep 0.01; done; exit 3`)
	defer g.Kill()
	pid := readPids(t, dir)["grandchild"]
	defer syscall.Kill(pid, syscall.SIGKILL)
	sup := cmd.Process.Pid
	held, stop := make(chan error, 1), make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	go func() {
		runtime.LockOSThread() // ptrace's tracer is a thread: it stays locked, and ends with the goroutine
		if err := syscall.PtraceAttach(sup); err != nil {
			held <- err
			return
		}
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(sup, &ws, syscall.WALL, nil)
		held <- err
		<-stop
		// SIGSTOP delivered: a group stop, which its tracer ends, not SIGCONT
		held <- syscall.PtraceCont(sup, int(syscall.SIGSTOP))
		<-release
	}()
	if err := <-held; err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot hold the supervisor in a ptrace stop here: %v", err)
		}
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return commandEnded(g.pid, sup) }, "the command to exit", nil)
	close(stop)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return stopped(sup) }, "the supervisor to stop", nil)
	err := waitEnded(t, g, cmd)
	var he *HeldError
	if !errors.As(err, &he) || he.Ended != "exit status 3" {
		t.Fatalf("Wait: %v, want a HeldError saying exit status 3", err)
	}
	if alive(pid, pid) {
		t.Fatalf("the grandchild %d outlived Wait", pid)
	}
	if alive(sup, sup) {
		t.Fatalf("the supervisor %d outlived Wait", sup)
	}
}

// A signal asked for while the command has its supervisor stopped (which
// relays it) reaches the command: Signal continues the supervisor, as it
// would never relay it stopped, and nothing else may be looking (a caller
// that waits with cmd.Wait, or not yet).
func TestSignalReachesACommandThatStoppedItsSupervisor(t *testing.T) {
	g, _, dir := startScript(t, `trap 'echo > termed; exit 0' TERM; kill -STOP $PPID; echo > started; while :; do sleep 0.01; done`)
	defer g.Kill()
	if err := g.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitBound)
	for !exists(filepath.Join(dir, "termed")) {
		if time.Now().After(deadline) {
			t.Fatalf("the command did not get SIGTERM within %v of Signal, its supervisor stopped", waitBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
