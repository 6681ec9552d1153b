//go:build linux

package child

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/supervisor"
)

// Wait reaps the supervisor only while no Kill (nor Signal) is using its
// pid: Kill holds g.mu while it looks whether the supervisor is stopped
// and kills what is below it, by pid, and a pid reaped meanwhile can be
// given again to another child of this process (shell--run's timeout
// runs Wait in a goroutine, then Kill). Here g.mu is held as Kill holds
// it while the command exits: the supervisor stays unreaped (a zombie)
// and Wait has not returned until g.mu is let go. (Wait reaped it at
// once.)
func TestWaitReapsTheSupervisorOnlyOutsideKill(t *testing.T) {
	g, cmd, _ := startScript(t, `echo > started; exit 3`)
	defer g.Kill()
	g.mu.Lock()
	locked := true
	defer func() {
		if locked {
			g.mu.Unlock()
		}
	}()
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	// the supervisor has exited (not reaped), or Wait reaped it
	supervisor.ExitedUnreaped(cmd.Process.Pid)
	select {
	case err := <-done:
		t.Fatalf("Wait returned (%v), the supervisor reaped, while g.mu was held", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid)); err != nil {
		t.Fatalf("the supervisor was reaped while g.mu was held: %v", err)
	}
	g.mu.Unlock()
	locked = false
	select {
	case err := <-done:
		wantExit(t, err, 3)
	case <-time.After(waitBound):
		t.Fatalf("Wait has not returned %v after g.mu was let go", waitBound)
	}
}

// Signal with the supervisor stopped (by the command) and its control
// pipe full (words written while it was stopped) continues it first, and
// returns: it wrote, holding g.mu, and then continued it, so it waited
// for ever, and Kill behind it.
func TestSignalToAStoppedSupervisorWithAFullPipeReturns(t *testing.T) {
	g, cmd, dir := startScript(t, `echo > started; while [ ! -e go ]; do sleep 0.01; done; kill -STOP $PPID; sleep 30`)
	defer g.Kill()
	defer cmd.Process.Signal(syscall.SIGCONT)                                  // a failed run: Signal's write ends, and Kill can run
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil { // after Start, which continues a supervisor stopped before its word
		t.Fatal(err)
	}
	waitFor(t, func() bool { return stopped(cmd.Process.Pid) }, "the supervisor to stop", nil)
	fillControlPipe(t, g)
	signalled := make(chan error, 1)
	go func() { signalled <- g.Signal(syscall.SIGTERM) }()
	select {
	case err := <-signalled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitBound):
		t.Fatalf("Signal has not returned %v after it was called, the supervisor stopped and its pipe full", waitBound)
	}
}

// Kill while Wait waits — the command running, stopping its supervisor
// in loops, or stopping it and exiting — returns, and Wait returns after
// it, with nothing left: Wait's reap waits for Kill's hold of g.mu, and
// never the other way round.
func TestKillWhileWaitWaitsEndsBoth(t *testing.T) {
	scripts := map[string]string{
		"runs":  `echo > started; sleep 30 & sleep 30`,
		"stops": `echo > started; sup=$PPID; f(){ while :; do kill -STOP $sup; done; }; f & f & sleep 30`,
		"exits": `echo > started; sleep 0.2; kill -STOP $PPID; exit 3`,
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			g, cmd, _ := startScript(t, script)
			done := make(chan error, 1)
			go func() { done <- g.Wait() }()
			time.Sleep(300 * time.Millisecond)
			killed := make(chan struct{})
			go func() { g.Kill(); close(killed) }()
			for _, c := range []struct {
				what string
				ch   <-chan struct{}
			}{{"Kill", killed}, {"Wait", waitDone(done)}} {
				select {
				case <-c.ch:
				case <-time.After(15 * time.Second):
					t.Fatalf("%s has not returned 15 s after Kill began (supervisor %d)", c.what, cmd.Process.Pid)
				}
			}
			if kids := children(t); len(kids) > 0 {
				t.Fatalf("processes %v left (supervisor %d)", kids, cmd.Process.Pid)
			}
		})
	}
}

// waitDone is closed once done has said something.
func waitDone(done <-chan error) <-chan struct{} {
	c := make(chan struct{})
	go func() { <-done; close(c) }()
	return c
}

// fillControlPipe fills g's control pipe with words of 0, which the
// supervisor passes on to no one, until a write would wait.
func fillControlPipe(t *testing.T, g *Group) {
	t.Helper()
	zeros := make([]byte, 4096)
	for {
		_ = g.ctl.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := g.ctl.Write(zeros); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
	}
	_ = g.ctl.SetWriteDeadline(time.Time{})
}
