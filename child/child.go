// Package child starts the processes myelin runs for a tool call — a
// shell--run command, a stdio MCP server — so that none of them, nor
// anything they start, outlives the call's end or myelin, however myelin
// stops: a normal exit, a panic, a signal, or SIGKILL, where no Go code
// runs at all (contract §7: nothing myelin starts outlives it, whether or
// not it left its process group).
//
// On Linux each command runs under a supervisor (package
// internal/supervisor): myelin's own executable started again, which starts
// the command as its child in a process group of its own and makes itself
// the subreaper of everything below it (PR_SET_CHILD_SUBREAPER). A process
// of the command's subtree that calls setsid, or whose parent exits (a
// double fork), then becomes the supervisor's child instead of init's: it
// can leave the group and the session, not the subtree. When the command
// exits, when Kill asks, or when myelin dies (the kernel closes the
// control pipe whose write end only myelin holds), the supervisor kills
// every process below it, reaps them, and exits as the command did. The
// command also gets the parent-death signal (SIGKILL) from the
// supervisor, in case someone kills the supervisor. exec.Cmd's Process is
// then the supervisor; Group.Wait (which calls cmd.Wait) returns the
// command's exit status or signal.
//
// Start returns once the supervisor said the command started (or why
// not), and never waits for ever for it: a command can stop its
// supervisor (SIGSTOP to its parent) as its first act, before the
// supervisor said it, and a stopped supervisor says nothing. Start
// continues (SIGCONT) a supervisor it finds stopped meanwhile — myelin
// never wants its own supervisor stopped, and the command then runs as
// one that stopped it a moment later would — and one that has not said
// it within 10 s all the same (stopped again and again, held by a
// debugger, stuck) is killed with everything below it, and Start says
// so. Kill likewise continues a supervisor found stopped while it waits
// for everything to end, and the first time first kills every process
// below it itself (each killed as /proc shows it, before its own children
// are read: what is killed forks no more), so that a command stopping it
// in a loop cannot keep it from killing them; and a supervisor that does
// not end within about 10 s (held by a debugger, stuck) is killed after
// every process below it. Wait, which callers call instead of cmd.Wait,
// continues a supervisor it finds stopped while the command runs (a
// command can stop it at any time, and a stopped supervisor never reports
// the command's end); once the command's own process has ended, it first
// kills every process below a supervisor it finds stopped, as Kill does;
// and one still held stopped 10 s later (found stopped at every poll) is
// killed after them, and Wait says how the command ended if /proc still
// showed it (HeldError). /proc not readable, or a command whose main
// thread ended while its other threads run, is a command that runs.
// The waits are counted in polls of 20 ms, not by the clock: myelin itself
// paused (Ctrl-Z, a frozen cgroup) does not run them out.
//
// A command prepared by package sandbox (sandbox.Policy.Apply) is started
// the same way; its supervisor starts in new mount (and network, and user)
// namespaces and confines itself before it forks the command (package
// internal/supervisor). Where it cannot, Start's error wraps
// sandbox.ErrUnavailable and the command does not run. Its temp dir
// (TMPDIR) is one myelin makes in os.TempDir() and holds a flock on while
// the command runs; Kill removes it. Where myelin was killed, the
// supervisor empties it, and a later sweep removes it, empty and no
// longer locked: a process of the same user sweeps the temp dir's
// directory at its first sandboxed Start there and at the first one 10
// minutes or more after its last sweep (temp_linux.go, package
// internal/leftover); a sweep never removes a link, a directory that is
// not empty, or one whose lock is held.
//
// On other Unix systems each child gets a process group of its own, and in
// that group a watcher: a tiny `/bin/sh` that reads its stdin, a pipe whose
// write end only myelin holds (close-on-exec, so no other child inherits
// it). When myelin dies the watcher's read returns and it kills its own
// group with SIGKILL. A process that leaves the group on purpose (setsid)
// is out of its reach there.
//
// Elsewhere (not Unix) a child is started plainly and Kill kills only it.
//
// Package child must not decide when a child should stop (its callers
// do, with Signal and Kill; Wait ends only what is left of a command that
// has ended), nor wait for the child unasked (callers call Group.Wait),
// nor read or write its input and output.
package child

import "fmt"

// HeldError is what Group.Wait returns when the command ended but its
// supervisor (Linux) did not report it: found stopped after the command's
// end, continued, and with every process below it killed, it was still
// found stopped at every poll (20 ms apart) for about 10 s later —
// stopped again and again from outside the command. (A debugger's stop,
// ptrace's, is not seen as stopped, and a traced process's exit goes to
// its tracer first: Wait returns only once a debugger lets the supervisor
// go, though Kill kills it and what is below it.) Wait then killed it too, after
// every process below it:
// nothing of the command runs any more. A supervisor found running in
// between is waited for, never killed by Wait.
type HeldError struct {
	// Path is the command's.
	Path string
	// Ended is how the command ended, as os.ProcessState says it ("exit
	// status 3", "signal: killed"), or "" when it could not be known
	// (the supervisor had reaped it already, or /proc did not show it).
	Ended string
}

// Error says that the command ended and how, if that is known, and that
// its supervisor was held stopped.
func (e *HeldError) Error() string {
	how := "its exit status could not be known"
	if e.Ended != "" {
		how = e.Ended
	}
	return fmt.Sprintf("child: %s ended (%s), but its supervisor stayed stopped and did not report it; it and everything the command started were killed", e.Path, how)
}
