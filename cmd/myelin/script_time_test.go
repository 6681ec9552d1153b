package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 10 §8, through the built binary: a script that catches the
// engine's own errors in a loop ran 8 s under --script-time 3s and ended
// only at the dispatcher's backstop. It is stopped at its limit, the call
// returns within the limit plus a second, and no engine process is left in
// myelin's process group.
func TestTheScriptTimeLimitStopsAScriptThatCatchesEngineErrors(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	code := `function f() { try { f() } catch (e) { f() } } for (;;) { try { f() } catch (e) {} }`
	cmd := exec.Command(bin, "tool", "call", "code_execution", `{"code":`+quote(code)+`}`, "--workspace", dir, "--script-time", "1s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second): // a hang's bound, far past limit plus a second
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		t.Fatalf("still running after 10 s: %s", errOut.String())
	}
	elapsed := time.Since(t0)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out.String(), "the script was stopped at its time limit of 1s") {
		t.Errorf("%v: %q %q", err, out.String(), errOut.String())
	}
	// The binary's own start and exit are in it too.
	if elapsed > 2*time.Second {
		t.Errorf("returned after %v, past the limit plus a second", elapsed)
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		t.Errorf("a process of myelin's group outlived it (kill -0: %v)", err)
	}
}
