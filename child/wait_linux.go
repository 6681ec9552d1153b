package child

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/myelin-run/myelin/internal/supervisor"
)

// Wait waits for the command to end, and returns as cmd.Wait would (it
// calls it): nil, or an *exec.ExitError with the command's exit status or
// signal, once the command ended and everything it started was killed.
// Call it instead of cmd.Wait, and not beside it.
//
// A command, or anything it started, can stop the supervisor (SIGSTOP to
// its parent) at any time, and a stopped supervisor never reports the
// command's end: cmd.Wait alone would wait until its caller gave up.
// Wait looks whether the supervisor is stopped each time a poll passes
// without its end (20 ms at first, twice as long each time after, up to a
// second; 20 ms again once it was found stopped or Kill began), and
// continues it (SIGCONT) — the same look Start makes. The first time it
// finds the supervisor stopped after the command's own process has ended,
// it first kills every process below it (what the supervisor would kill
// now, and what keeps stopping it among them), as Kill does. A supervisor
// found stopped at every poll for about 10 s after that (500 polls in a
// row: stopped again and again from outside; a debugger's stop, ptrace's,
// is not seen as stopped, and a traced process's exit goes to its tracer
// first, so Wait returns only once a debugger lets the supervisor go —
// Kill kills it, and what is below it, all the same) is killed after
// every process below it, and Wait returns a
// *HeldError: how the command ended when /proc still showed it, or that
// it could not be known; one found running again is waited for, the
// count begun anew. The command's own process has ended when /proc shows
// it gone or a zombie with no thread left (a main thread that ended on
// its own, while others run, has not); /proc not readable (out of file
// descriptors) says it runs, and a process that still exists though
// /proc hides it (hidepid) runs unless its pidfd says it has ended
// (gone). While it runs, Wait only continues
// a stopped supervisor: it never ends a command itself, nor returns
// before everything below the supervisor ended.
func (g *Group) Wait() error {
	sup := g.cmd.Process.Pid
	poll := startPoll
	since := -1 // polls it was found stopped in a row, since the command was found ended
	for {
		if g.killing.Load() {
			poll = startPoll
		}
		_ = g.done.SetReadDeadline(time.Now().Add(poll))
		// The end of the status pipe: the supervisor has exited. Closed:
		// Kill saw it exit, or killed it.
		if err := g.drain(); !errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if !stopped(sup) {
			// running again: the countdown counts only a supervisor
			// that stays stopped (a running one reports the end)
			since = -1
			poll = min(2*poll, waitPollMost)
			continue
		}
		poll = startPoll
		switch {
		case since >= 0:
			if since++; since > int(killWait/startPoll) {
				return g.held(sup)
			}
		case commandEnded(g.pid, sup):
			since = 0
			killBelow(sup)
		}
		_ = g.cmd.Process.Signal(syscall.SIGCONT)
	}
	return g.reap()
}

// reap reaps the supervisor (cmd.Wait) once it has exited or was killed.
// It first waits for the exit without reaping it (waitid with WNOWAIT:
// the pid stays the supervisor's, a zombie), then marks it reaped holding
// g.mu — Kill and Signal use its pid (to look whether it is stopped, to
// kill what is below it) only holding g.mu, and not once it is marked —
// and then reaps it without the lock: cmd.Wait also waits for the copying
// of a command's stdio that is not a file, as long as its other end is
// held open, and Kill must not wait behind that.
func (g *Group) reap() error {
	supervisor.ExitedUnreaped(g.cmd.Process.Pid)
	g.mu.Lock()
	g.reaped = true
	g.mu.Unlock()
	return g.cmd.Wait()
}

// waitPollMost bounds how far apart Wait's looks at a supervisor that has
// not been found stopped grow: a command that ran long is looked at once a
// second, and one stopped after that is noticed within a second.
const waitPollMost = time.Second

// drain reads the supervisor's status pipe (past its first line, which
// Start read: nothing more comes) until its end, and returns nil then, or
// the read's error (a deadline's end, the pipe closed by Kill).
func (g *Group) drain() error {
	var b [64]byte
	for {
		if _, err := g.done.Read(b[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// held ends a supervisor that, found stopped after its command ended and
// continued, with every process below it killed, was found stopped again
// at every poll for killWait since (stopped again and again from outside
// its subtree): how the command ended is
// read from /proc while the supervisor still holds it unreaped, then
// every process below it is killed, then it, and it is reaped.
func (g *Group) held(sup int) error {
	ended, known := exitOf(g.pid, sup)
	killTree(sup)
	_ = g.cmd.Process.Kill()
	_ = g.reap()
	e := &HeldError{Path: g.path}
	if known {
		e.Ended = describe(ended)
	}
	return e
}

// commandEnded reports whether the command pid, a child of the
// supervisor sup, has ended: exited and not reaped yet (a zombie with no
// thread left), or gone — reaped by the supervisor, its pid perhaps
// another process's now. A zombie whose other threads run (its main
// thread ended on its own: pthread_exit) has not ended; nor has one
// /proc could not be read for (out of file descriptors), nor one /proc
// hides unless gone says it ended: Wait never ends a command on doubt.
func commandEnded(pid, sup int) bool {
	state, fields, err := procStat(pid)
	switch {
	case err != nil:
		return gone(pid, err)
	case fields[1] != strconv.Itoa(sup) || state == 'X':
		return true
	case state == 'Z':
		return aloneIn(pid)
	}
	return false
}

// aloneIn reports whether the zombie pid, a thread group's leader, is the
// last of its threads: /proc/PID/status counts it (a zombie leader stays
// in its group until the group's end) and every thread that still runs.
// Gone meanwhile is alone too; not known (/proc not readable) is not.
func aloneIn(pid int) bool {
	status, err := readProc("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return gone(pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if n, ok := strings.CutPrefix(line, "Threads:"); ok {
			return strings.TrimSpace(n) == "1"
		}
	}
	return false
}

// gone reports whether err, reading process pid's file in /proc, says
// that the process is gone or has ended (ESRCH: it exited while being
// read; ENOENT: no such directory, and no such process either, or one
// that has ended — /proc mounted with hidepid=2 hides a process this one
// may not trace, a non-dumpable one of the same user among them, as
// ENOENT, zombie or not), not merely that it could not be read (EMFILE,
// EACCES).
func gone(pid int, err error) bool {
	switch {
	case errors.Is(err, syscall.ESRCH):
		return true
	case !errors.Is(err, fs.ErrNotExist):
		return false
	case syscall.Kill(pid, 0) == syscall.ESRCH:
		return true
	}
	return hiddenExited(pid)
}

// hiddenExited reports whether pid, a process that exists though /proc
// hides it, has ended: a zombie whose threads have all exited, as its
// pidfd says by polling readable. Not known (no pidfd before Linux 5.3)
// is not ended.
func hiddenExited(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
}

// killBelow is killTree, which Wait calls once it found the command
// ended under a stopped supervisor: a var so that a test can leave a
// command it makes Wait take for ended running.
var killBelow = killTree

// readProc reads a file of /proc: os.ReadFile, a var so that a test can
// make it fail as a loaded or locked-down host does.
var readProc = os.ReadFile

// exitOf is how the command pid ended, as /proc shows its zombie while its
// supervisor sup has not reaped it (the exit_code field, in wait(2)'s
// form; the thread group leader's, which is the process's unless the
// leader ended on its own before): ok only when it is that zombie, and
// this process may read the field (owned by this process's user and
// group, real, effective and saved alike — else the kernel shows 0).
func exitOf(pid, sup int) (syscall.WaitStatus, bool) {
	state, fields, err := procStat(pid)
	if err != nil || state != 'Z' || fields[1] != strconv.Itoa(sup) || len(fields) < 50 {
		return 0, false
	}
	status, err := readProc("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, ids, _ := strings.Cut(line, ":")
		want := -1
		switch name {
		case "Uid":
			want = os.Geteuid()
		case "Gid":
			want = os.Getegid()
		}
		if want < 0 {
			continue
		}
		for i, id := range strings.Fields(ids) {
			if i < 3 && id != strconv.Itoa(want) {
				return 0, false
			}
		}
	}
	code, err := strconv.Atoi(fields[49]) // field 52 of stat(5), counted from the state
	if err != nil {
		return 0, false
	}
	return syscall.WaitStatus(code), true
}

// procStat is the state of process pid as /proc/PID/stat shows it, and
// the fields from the state on (the state is fields[0], the parent's pid
// fields[1]); or the error reading it (gone says whether that means the
// process is gone) or an error that it could not be read as such.
func procStat(pid int) (state byte, fields []string, err error) {
	stat, err := readProc("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, nil, err
	}
	i := strings.LastIndexByte(string(stat), ')') // the name, in parentheses, may hold anything
	if i >= 0 {
		fields = strings.Fields(string(stat[i+1:]))
	}
	if len(fields) < 2 || len(fields[0]) != 1 {
		return 0, nil, fmt.Errorf("child: reading /proc/%d/stat: %q is not a process's stat", pid, stat)
	}
	return fields[0][0], fields, nil
}

// describe says how a process ended, as os.ProcessState does.
func describe(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		s := "signal: " + ws.Signal().String()
		if ws.CoreDump() {
			s += " (core dumped)"
		}
		return s
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}
