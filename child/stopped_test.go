//go:build linux

package child

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/supervisor"
)

// A command that stops its supervisor at once (SIGSTOP to its parent, its
// first act) can do it before the supervisor said the command started,
// and a stopped supervisor never says it: Start waited for ever (a CI run
// under load did). Start continues a supervisor it finds stopped, and
// returns; Kill then ends everything.
//
// The command alone wins that race only now and then (it must stop its
// parent within microseconds of its exec), so the test stops the
// supervisor itself as soon as it runs (right after its exec, before the
// Go runtime has even started it): what the command does, done first.
// The command stops it again at once; whether that is before or after
// its first word, Start must return.
func TestStartReturnsWhenTheSupervisorIsStoppedBeforeItsFirstWord(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", `kill -STOP $PPID; sleep 300 & echo $! > grandchild; echo > started; exec sleep 300`)
	cmd.Dir = dir
	type started struct {
		g   *Group
		err error
	}
	done := make(chan started, 1)
	stoppedPid := make(chan int, 1)
	go func() {
		// Locked: the supervisor is then a child of this very thread,
		// listed in its own /proc children file.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := syscall.Gettid()
		go func() { stoppedPid <- stopOnExec(tid, "myelin-supervisor") }()
		g, err := Start(cmd)
		done <- started{g, err}
	}()
	pid := <-stoppedPid
	if pid == 0 {
		t.Fatal("the test never saw the supervisor start, to stop it")
	}
	var s started
	select {
	case s = <-done:
	case <-time.After(10 * time.Second): // Start notices within startPoll
		t.Errorf("Start still waits 10 s after its supervisor %d was stopped before its first word", pid)
		stop := make(chan struct{}) // continue it until it said it, to clean up
		go func() {
			for {
				_ = syscall.Kill(pid, syscall.SIGCONT)
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		s = <-done
		close(stop)
	}
	if s.err != nil {
		t.Fatalf("Start: %v", s.err)
	}
	go cmd.Wait()
	waitFor(t, func() bool { return exists(filepath.Join(dir, "started")) }, "the command to run", nil)
	grandchild := readPids(t, dir)["grandchild"]
	s.g.Kill()
	if alive(grandchild, grandchild) {
		syscall.Kill(grandchild, syscall.SIGKILL)
		t.Fatalf("the grandchild %d outlived Kill", grandchild)
	}
}

// stopOnExec waits for a child of thread tid (of this process) whose
// argv[0] is arg0 — it has exec'd it: stopped before, it would hold up
// the fork that made it — and stops it (SIGSTOP). It returns its pid, or
// 0 when none came within 10 s.
func stopOnExec(tid int, arg0 string) int {
	file := fmt.Sprintf("/proc/self/task/%d/children", tid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		data, _ := os.ReadFile(file)
		for _, p := range strings.Fields(string(data)) {
			pid, _ := strconv.Atoi(p)
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if first, _, _ := bytes.Cut(cmdline, []byte{0}); string(first) == arg0 {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				return pid
			}
		}
		time.Sleep(50 * time.Microsecond)
	}
	return 0
}

// A supervisor that never says whether the command started — here one
// held in a ptrace stop from its exec (SysProcAttr.Ptrace), which no
// SIGCONT ends, as a debugger the command attached to its parent would
// hold it — does not make Start wait for ever: it gives up after
// startWait, kills the supervisor, and says why; nothing is left running,
// no descriptor left open.
func TestStartGivesUpOnASupervisorThatNeverSpeaks(t *testing.T) {
	defer func(s, k time.Duration) { startWait, killWait = s, k }(startWait, killWait)
	startWait, killWait = 200*time.Millisecond, 200*time.Millisecond
	warm := exec.Command("true") // the runtime's own descriptors (the poller's) opened first
	if g, err := Start(warm); err != nil {
		t.Fatal(err)
	} else {
		warm.Wait()
		g.Kill()
	}
	fds := openFiles(t)
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // ptrace's tracer is a thread
		defer runtime.UnlockOSThread()
		_, err := Start(cmd)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Start still waits 10 s after it began, with startWait 200 ms")
	}
	if errors.Is(err, syscall.EPERM) { // ptrace refused here (Yama's scope 3, a seccomp filter)
		t.Skipf("cannot hold the supervisor in a ptrace stop here: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "did not say within 200ms whether it started it") {
		t.Fatalf("Start: %v, want it to say its supervisor did not say within 200ms", err)
	}
	t.Log(err)
	if kids := children(t); len(kids) > 0 {
		t.Errorf("left processes behind: %v", kids)
	}
	for fd, what := range openFiles(t) { // fewer is fine: earlier tests' pipes closing
		if fds[fd] != what {
			t.Errorf("file %s (%s) open after Start gave up, not before", fd, what)
		}
	}
}

// A command that stops its supervisor over and over (a loop of kill -STOP
// $PPID) does not keep Kill from ending everything it started: each time
// Kill finds the supervisor stopped, it kills every process below it
// itself before it continues it. (Continuing it alone, the supervisor
// could take seconds between stops to kill the loop, and after killWait
// it was killed itself, which left the grandchild.)
func TestKillEndsACommandThatStopsItsSupervisorOverAndOver(t *testing.T) {
	defer func(k time.Duration) { killWait = k }(killWait)
	killWait = time.Second
	g, cmd, dir := startScript(t, `sleep 300 & echo $! > grandchild; echo > started; while :; do kill -STOP $PPID; done`)
	waited := make(chan error, 1)
	go func() { waited <- g.Wait() }() // continuing it meanwhile, as callers' waits do
	time.Sleep(50 * time.Millisecond)  // stopping its supervisor, by now
	pid := readPids(t, dir)["grandchild"]
	g.Kill()
	if alive(pid, pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the grandchild %d outlived Kill", pid)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("Wait has not returned 10 s after Kill did")
	}
}

// openFiles are the files this process has open, by descriptor.
func openFiles(t *testing.T) map[string]string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, fd := range fds {
		if what, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil {
			files[fd.Name()] = what
		}
	}
	return files
}

// myelin itself paused (Ctrl-Z then fg, a frozen cgroup, `docker pause`)
// for longer than startWait while Start waits for the supervisor's first
// word: the supervisor, not paused, says its command started, and Start
// takes it, not a wait run out (on resume the read's deadline can fire
// before the pipe is seen readable). The wait is counted in polls. (From
// a review: with the wait counted by the clock, 1–2 Starts of 5 failed.)
func TestStartKeepsACommandThatStartedWhileMyelinWasPaused(t *testing.T) {
	defer func(s time.Duration) { startWait = s }(startWait)
	startWait = 300 * time.Millisecond
	failures := 0
	for i := range 5 {
		// continues this process 1 s after it is stopped (or after some
		// 15–30 s of looking, whatever happened): never left stopped
		helper := exec.Command("sh", "-c", fmt.Sprintf(`for i in $(seq 1000); do [ "$(sed 's/.*) //; s/ .*//' /proc/%[1]d/stat)" = T ] && break; sleep 0.01; done; sleep 1; kill -CONT %[1]d`, os.Getpid()))
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sleep", "0.1")
		done := make(chan error, 1)
		go func() {
			g, err := Start(cmd)
			if err == nil {
				cmd.Wait()
				g.Kill()
			}
			done <- err
		}()
		time.Sleep(time.Millisecond) // Start waits for the first word now, most times
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		err := <-done
		helper.Wait()
		if err != nil {
			failures++
			t.Logf("attempt %d: Start: %v", i, err)
		}
	}
	if failures > 0 {
		t.Errorf("%d of 5 Starts failed after this process was paused 1 s (startWait 300 ms), though each supervisor had said its command started", failures)
	}
}

// A supervisor held where SIGCONT does not reach it (a debugger's ptrace
// stop) while its command runs with children of its own: Kill gives up
// waiting for it after killWait, and kills every process below it before
// it kills it, so none is left (killing the supervisor alone left the
// command's children running).
func TestKillLeavesNothingBelowASupervisorHeldByADebugger(t *testing.T) {
	defer func(k time.Duration) { killWait = k }(killWait)
	killWait = 300 * time.Millisecond
	g, cmd, dir := startScript(t, `sleep 300 & echo $! > grandchild; echo > started; wait`)
	pid := readPids(t, dir)["grandchild"]
	defer syscall.Kill(pid, syscall.SIGKILL)
	held := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread() // ptrace's tracer is a thread: it stays locked, and ends with the goroutine
		if err := syscall.PtraceAttach(cmd.Process.Pid); err != nil {
			held <- err
			return
		}
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WALL, nil)
		held <- err
		<-release
	}()
	if err := <-held; err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot hold the supervisor in a ptrace stop here: %v", err)
		}
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { g.Kill(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Kill still waits 10 s after it began, with killWait 300 ms")
	}
	close(release)
	cmd.Wait()
	if alive(pid, pid) {
		t.Fatalf("the command's child %d outlived Kill of a supervisor held by a debugger", pid)
	}
}

// A command that stops its supervisor in a loop and also continues its
// own process group (kill -CONT 0) while it forks cannot keep Kill from
// returning, nor leave anything running: the processes below the
// supervisor are each killed as they are found (a review found a walk
// that stopped them, which the command continued, walking for ever; this
// test caught that walk in about a third of its runs).
func TestKillReturnsWhenTheCommandContinuesItsOwnGroupWhileItStopsItsSupervisor(t *testing.T) {
	defer func(k time.Duration) { killWait = k }(killWait)
	killWait = time.Second
	g, cmd, dir := startScript(t, `sup=$PPID; echo $$ > pgid; for i in $(seq 200); do sleep 1000 & done; f(){ while :; do kill -STOP $sup; (kill -CONT 0) & done; }; f & f & echo > started; wait`)
	go cmd.Wait()
	b, _ := os.ReadFile(filepath.Join(dir, "pgid"))
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { g.Kill(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL) // what the test leaves, ended
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("Kill has not returned 30 s after it began (killWait 1 s)")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(inGroup(pgid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the killed, exiting
	}
	if left := inGroup(pgid); len(left) > 0 {
		syscall.Kill(-pgid, syscall.SIGKILL)
		t.Fatalf("processes %v of the command's group %d outlived Kill", left, pgid)
	}
}

// inGroup are the live processes (not zombies) of process group pgid.
func inGroup(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state, ppid, pgrp, …
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Where the kernel shows no children files, killTree finds the processes
// below the supervisor from one scan of /proc a pass, and kills them all.
func TestKillTreeWithoutChildrenFilesKillsEveryProcessBelow(t *testing.T) {
	defer func(h func() bool) { hasChildrenFiles = h }(hasChildrenFiles)
	hasChildrenFiles = func() bool { return false }
	g, cmd, dir := startScript(t, `(sleep 300 & echo $! > grandchild; echo > started; wait) & sleep 300 & wait`)
	defer g.Kill()
	go cmd.Wait()
	pid := readPids(t, dir)["grandchild"]
	defer syscall.Kill(pid, syscall.SIGKILL)
	killTree(cmd.Process.Pid)
	if alive(pid, pid) {
		t.Fatalf("the grandchild %d outlived killTree without children files", pid)
	}
	if kids := supervisor.ChildrenOf(cmd.Process.Pid); len(kids) > 0 {
		for _, k := range kids {
			if alive(k, k) {
				t.Fatalf("the supervisor's child %d outlived killTree", k)
			}
		}
	}
}

// startScript starts bash running script in a temp dir of its own (its
// working directory) under Start, and waits for it to write the file
// "started" there.
func startScript(t *testing.T, script string) (*Group, *exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return exists(filepath.Join(dir, "started")) }, "the command to run", nil)
	return g, cmd, dir
}
