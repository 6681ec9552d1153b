package child

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/myelin-run/myelin/internal/leftover"
	"github.com/myelin-run/myelin/internal/supervisor"
	"github.com/myelin-run/myelin/sandbox"
)

// Group is one started command under its supervisor. Kill it when the
// command has exited, or to stop it: that kills everything the command
// started. Wait is called once; the other methods are safe for
// concurrent use, with it and with each other.
type Group struct {
	cmd     *exec.Cmd
	path    string   // the command's own path (cmd.Path is the supervisor's)
	pid     int      // the command's pid, as its supervisor said it
	ctl     *os.File // myelin's end of the supervisor's control pipe
	status  *bufio.Reader
	done    *os.File // the read end of the supervisor's status pipe
	mu      sync.Mutex
	ended   bool         // the supervisor was told to end and has
	reaped  bool         // Wait is reaping the supervisor: its pid is not to be used
	killing atomic.Bool  // Kill has begun: Wait looks every startPoll
	tmp     leftover.Dir // the sandboxed command's temp dir, removed by Kill
}

// Start starts cmd (not yet started) under a supervisor: myelin's own
// executable, started again as the process that runs cmd as its child and
// is the subreaper of everything below it (package internal/supervisor). cmd
// itself then runs the supervisor: cmd.Process is the supervisor, and
// Group.Wait (not cmd.Wait: see Wait) returns once the command ended and
// everything it started was killed, with the command's exit status (or its
// signal). cmd.SysProcAttr may set other fields, which apply to the
// supervisor and so to the command; it must not ask for a session or a
// terminal of its own (Setsid, Setctty, Foreground). Call Kill when the
// command has exited (after Wait) or to stop it.
func Start(cmd *exec.Cmd) (*Group, error) {
	attr, err := startable(cmd)
	if err != nil {
		return nil, err
	}
	exe := "/proc/self/exe" // still this program when its file was replaced since
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("child: finding myelin's own executable to supervise %s: %w", cmd.Path, err)
		}
	}
	c, err := commandOf(cmd)
	if err != nil {
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		c.tmp.Remove()
		return nil, fmt.Errorf("child: making the supervisor's control pipe for %s: %w", cmd.Path, err)
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		c.tmp.Remove()
		return nil, fmt.Errorf("child: making the supervisor's status pipe for %s: %w", cmd.Path, err)
	}
	c.supervised(cmd, exe, attr, ctlR, doneW)
	err = cmd.Start()
	ctlR.Close()
	doneW.Close()
	if err != nil {
		ctlW.Close()
		doneR.Close()
		c.tmp.Remove()
		return nil, c.startError(cmd, err)
	}
	g := &Group{cmd: cmd, path: c.path, ctl: ctlW, done: doneR, status: bufio.NewReader(doneR), tmp: c.tmp}
	if err := g.started(); err != nil {
		return nil, err
	}
	return g, nil
}

// startable checks that cmd can be started under a supervisor, and
// returns a copy of its SysProcAttr (an empty one for none).
func startable(cmd *exec.Cmd) (*syscall.SysProcAttr, error) {
	if cmd.Process != nil {
		return nil, fmt.Errorf("child: %s was already started", cmd.Path)
	}
	if cmd.Err != nil { // exec.Command could not find it
		return nil, cmd.Err
	}
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		if cmd.SysProcAttr.Setsid || cmd.SysProcAttr.Setctty || cmd.SysProcAttr.Foreground {
			return nil, fmt.Errorf("child: %s asks for a session or terminal of its own (Setsid, Setctty or Foreground), which would take it out of the process group that dies with myelin", cmd.Path)
		}
		copied := *cmd.SysProcAttr
		attr = &copied
	}
	return attr, nil
}

// command is the command a supervisor is to run.
type command struct {
	path      string
	args      []string
	sandboxed bool
	tmp       leftover.Dir // a sandboxed command's temp dir, made by commandOf
}

// commandOf is the command cmd runs: cmd's own, or, prepared by package
// sandbox, the one its arguments name, with a temp dir of its own that
// myelin makes and removes (the supervisor, confined too, can only empty
// it; temp_linux.go says how those of a myelin that was killed are
// removed).
func commandOf(cmd *exec.Cmd) (command, error) {
	c := command{path: cmd.Path, args: cmd.Args}
	if len(c.args) == 0 {
		c.args = []string{c.path}
	}
	c.sandboxed = len(c.args) >= 3 && c.args[0] == supervisor.SandboxArg0
	if !c.sandboxed {
		return c, nil
	}
	c.path, c.args = c.args[1], c.args[2:]
	var err error
	if c.tmp, err = makeTemp(); err != nil {
		return c, fmt.Errorf("child: making the temp dir of %s: %w", c.path, err)
	}
	return c, nil
}

// supervised makes cmd run the supervisor exe, which runs c: it gets the
// command's environment, working directory, standard files and extra
// files, and hands them on, and the two pipes' ends (ctl, the control
// pipe's read end; done, the status pipe's write end) after them.
func (c command) supervised(cmd *exec.Cmd, exe string, attr *syscall.SysProcAttr, ctl, done *os.File) {
	first := 3 + len(cmd.ExtraFiles)
	var env []string
	for _, kv := range cmd.Environ() {
		if strings.HasPrefix(kv, supervisor.Env+"=") { // the supervisor's own, never the command's
			continue
		}
		if c.sandboxed && strings.HasPrefix(kv, supervisor.SandboxEnv+"=") {
			kv += supervisor.Record(supervisor.OpTemp, c.tmp.Path)
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, supervisor.Env+"="+strconv.Itoa(first))
	cmd.Path = exe
	cmd.Args = append([]string{"myelin-supervisor", c.path}, c.args...)
	cmd.ExtraFiles = append(cmd.ExtraFiles[:len(cmd.ExtraFiles):len(cmd.ExtraFiles)], ctl, done)
	// A group of its own: a terminal's Ctrl-C does not reach it. It has
	// no parent-death signal: it must outlive myelin to kill what is left.
	attr.Setpgid, attr.Pgid = true, 0
	cmd.SysProcAttr = attr
}

// startError is the error of a supervisor that did not start (err,
// cmd.Start's).
func (c command) startError(cmd *exec.Cmd, err error) error {
	if cmd.Dir != "" { // the kernel's error does not say it was the directory
		if _, serr := os.Stat(cmd.Dir); serr != nil {
			return fmt.Errorf("%w; its directory: %w", err, serr)
		}
	}
	if c.sandboxed {
		return fmt.Errorf("child: starting %s in namespaces of its own, for the sandbox: %w: %w; run with --sandbox off to run commands unconfined", c.path, sandbox.ErrUnavailable, err)
	}
	return fmt.Errorf("child: starting the supervisor of %s: %w", c.path, err)
}

// started reads the supervisor's first word: the command started, or why
// not (the supervisor is then killed and reaped). A supervisor stopped
// before it said it (the command's first act can be to stop its parent)
// is continued; one that has not said it within startWait, stopped again
// and again or stuck, is killed with everything below it.
func (g *Group) started() error {
	var line string
	continued, err := g.awaitSupervisor(startWait, func() error {
		part, err := g.status.ReadString('\n') // a deadline can cut a line: kept
		line += part
		return err
	}, nil)
	line = strings.TrimSuffix(line, "\n")
	if pid, ok := strings.CutPrefix(line, supervisor.StatusOK+" "); ok && err == nil {
		if g.pid, _ = strconv.Atoi(pid); g.pid > 0 {
			_ = g.done.SetReadDeadline(time.Time{})
			return nil
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// not answering: Kill's wait for it would be killWait more
		killTree(g.cmd.Process.Pid)
		_ = g.cmd.Process.Kill()
	}
	g.Kill()
	_ = g.cmd.Wait()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		why := "never found stopped: stuck"
		if continued > 0 {
			why = fmt.Sprintf("found stopped and continued %d times: the command, or something else such as a debugger, stops it again and again or holds it", continued)
		}
		return fmt.Errorf("child: the supervisor of %s did not say within %v whether it started it (%s); it and everything it started were killed: %w", g.path, startWait, why, os.ErrDeadlineExceeded)
	}
	if why, ok := strings.CutPrefix(line, supervisor.StatusError); ok {
		if strings.HasPrefix(why, supervisor.SandboxFailed) {
			return fmt.Errorf("%w: %s; run with --sandbox off to run commands unconfined", sandbox.ErrUnavailable, why)
		}
		return errors.New(why)
	}
	if err == nil { // a first line that is neither: said as it was
		return fmt.Errorf("child: the supervisor of %s ended before it started it (it said %q)", g.path, line)
	}
	return fmt.Errorf("child: the supervisor of %s ended before it started it (%w)", g.path, err)
}

// Signal sends sig to the command's process group while the command runs:
// the supervisor sends it, so it never reaches a group whose id was given
// to another since; a supervisor the command stopped is continued to send
// it. SIGKILL is Kill. It does nothing once the command ended.
func (g *Group) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok || s < 1 || s > 64 {
		return fmt.Errorf("child: %v is not a Unix signal", sig)
	}
	if s == syscall.SIGKILL {
		g.Kill()
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended || g.reaped {
		return nil
	}
	// Stopped (by the command), it would relay it only once continued,
	// and with the control pipe full (words written while it was
	// stopped) the write would wait for it: continued first, and again
	// each startPoll the write waits while it is found stopped. A Kill
	// begun meanwhile ends the wait: it ends the command anyway.
	_ = g.cmd.Process.Signal(syscall.SIGCONT)
	defer g.ctl.SetWriteDeadline(time.Time{})
	for {
		_ = g.ctl.SetWriteDeadline(time.Now().Add(startPoll))
		_, err := g.ctl.Write([]byte{byte(s)})
		switch {
		case err == nil || errors.Is(err, syscall.EPIPE):
			return nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return fmt.Errorf("child: asking the supervisor of %s to send %v: %w", g.path, sig, err)
		case g.killing.Load():
			return nil
		case stopped(g.cmd.Process.Pid): // not reaped: g.mu held, g.reaped false
			_ = g.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
}

// Kill kills the command and everything it started — in its group or not,
// its children's children, whatever called setsid — and returns once they
// are all gone. The supervisor itself is reaped by Wait. A second Kill
// does nothing. Once Wait has found the supervisor exited, Kill kills
// nothing: the supervisor killed what was below it before it exited,
// unless it was killed from outside, and then what it left is out of
// reach (docs/security.md).
func (g *Group) Kill() {
	g.killing.Store(true)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return
	}
	g.ended = true
	g.ctl.Close()
	if g.reaped {
		// exited (after killing everything below it, unless it was
		// killed from outside: docs/security.md), and being
		// reaped by Wait: its pid is not to be used any more
		g.done.Close()
		g.tmp.Remove()
		return
	}
	// A supervisor stopped by someone (SIGSTOP) would never answer.
	_ = g.cmd.Process.Signal(syscall.SIGCONT)
	// Until the supervisor exits, continued again if it is stopped again.
	// One that does not within killWait (it cannot be, short of a process
	// stuck in the kernel or held by a debugger) is killed, with every
	// process below it (killTree): Kill never hangs the call.
	walked := false
	_, err := g.awaitSupervisor(killWait, g.drain, func(pid int) {
		// once: what is killed stays dead, and a supervisor stopped
		// again after that is only continued
		if !walked {
			killTree(pid)
			walked = true
		}
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// not answering, stopped in a way SIGCONT does not end (a
		// debugger's) or stuck: what is below it first, then it
		killTree(g.cmd.Process.Pid)
		_ = g.cmd.Process.Kill()
	}
	g.done.Close()
	g.tmp.Remove()
}

// awaitSupervisor calls read, a read of the status pipe, until it returns
// anything but a deadline's end, for within (then read's error is
// os.ErrDeadlineExceeded). Each startPoll without an answer it looks
// whether the supervisor is stopped (SIGSTOP, from the command or
// anyone), which would never answer, and continues it (SIGCONT), after
// calling whenStopped (unless nil) with its pid; it returns how many times
// it did. An answer within startPoll, a normal start's, costs only the
// deadline set once.
//
// within is counted in polls, not by the clock: myelin itself paused
// (Ctrl-Z, a frozen cgroup, `docker pause`) for longer than within while
// the supervisor went on is one poll, not the end of the wait (on resume
// the deadline's timer can fire before the pipe is seen readable); and
// before it gives up, one last poll reads what came meanwhile.
func (g *Group) awaitSupervisor(within time.Duration, read func() error, whenStopped func(pid int)) (continued int, err error) {
	polls := int((within + startPoll - 1) / startPoll)
	for i := 0; ; i++ {
		_ = g.done.SetReadDeadline(time.Now().Add(min(startPoll, within)))
		if err = read(); !errors.Is(err, os.ErrDeadlineExceeded) || i >= polls {
			return continued, err
		}
		if pid := g.cmd.Process.Pid; stopped(pid) {
			if whenStopped != nil {
				whenStopped(pid)
			}
			_ = g.cmd.Process.Signal(syscall.SIGCONT)
			continued++
		}
	}
}

// stopped says whether the child process pid (this process's own
// supervisor, not reaped yet: its status pipe was just found open, which
// it holds until it exits, or g.mu is held and g.reaped false, without
// which Wait does not reap it) is stopped. It asks waitid for a stopped
// child without reaping it or taking its stop's report (WNOWAIT), so
// cmd.Wait and a later look see what they would have. Wait is the
// supervisor's only reaper (a caller's own cmd.Wait beside it is not
// allowed): it marks it reaped holding g.mu, once it has exited, and
// only then reaps it: so the pid this looks at, as the one killTree
// walks below, is still the supervisor's — never a pid the kernel gave
// again to another child of this process.
func stopped(pid int) bool {
	var info [32]int32 // a siginfo_t (128 bytes), whose first int is si_signo
	const pPID, wSTOPPED, wNOHANG, wNOWAIT = 1, 2, 1, 0x1000000
	_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)), wSTOPPED|wNOHANG|wNOWAIT, 0, 0)
	// Nothing to report leaves si_signo 0; a stopped child, SIGCHLD.
	return e == 0 && info[0] == int32(syscall.SIGCHLD)
}

// killTree kills (SIGKILL) every process below the supervisor pid,
// found stopped just now or not answering at all: each process /proc
// shows below it is killed as it is found, and then its own children are
// read — a process with a kill pending forks no more (a fork under way
// fails), so the walk converges. It starts again from the supervisor (the
// subreaper: the orphans of the killed become its children) until a pass
// finds none new, having begun when every process it killed had exited
// (so that no orphan was still on its way to the supervisor while it
// read). Waiting for the killed to exit is bounded by killTreeFor (a
// process stuck in the kernel), and the whole walk by killTreeMost. Kill
// does it so that a command that stops its supervisor again and again (a
// loop of `kill -STOP $PPID`) cannot keep it from killing everything, and
// before it kills a supervisor that never answered, so that nothing below
// it is left. A stopped or stuck supervisor reaps none of its children,
// and a killed process runs no more of its own code, so the pids read
// below it stay theirs until they are killed (short of the kernel reaping
// a child that exits in the microseconds between its read and its kill —
// its parent ignores SIGCHLD, or was in wait() as its kill came — and
// giving its pid again in those microseconds).
func killTree(pid int) {
	killed := map[int]bool{} // killed here, to be waited for
	tried := map[int]bool{}  // found, killed or not (not ours to kill: EPERM)
	start := time.Now()
	var waitFrom time.Time // when a pass last found none new
	for time.Since(start) < killTreeMost {
		settled := exited(killed) // before the pass: its orphans have moved
		found := false
		children := childrenReader()
		for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
			for _, k := range children(queue[0]) {
				if !tried[k] {
					tried[k], found = true, true
					if syscall.Kill(k, syscall.SIGKILL) == nil {
						killed[k] = true
					}
				}
				queue = append(queue, k)
			}
		}
		switch {
		case found:
			waitFrom = time.Time{}
		case settled:
			return
		case waitFrom.IsZero():
			waitFrom = time.Now()
		case time.Since(waitFrom) >= killTreeFor:
			return // a process killed that does not exit: stuck in the kernel
		default:
			time.Sleep(time.Millisecond) // the killed, exiting: their orphans move
		}
	}
}

// killTreeFor bounds how long killTree waits for the processes it killed
// to exit once it finds none new, and killTreeMost the whole walk: what
// is killed forks no more, so a walk ends long before, unless /proc takes
// seconds to read (a host of many processes without children files).
const (
	killTreeFor  = time.Second
	killTreeMost = 10 * time.Second
)

// exited reports whether every process of pids has exited: gone from
// /proc, or a zombie (its children already given to the subreaper).
func exited(pids map[int]bool) bool {
	for k := range pids {
		state, _, err := procStat(k)
		if err != nil {
			if gone(k, err) {
				continue
			}
			return false // not known: not taken for exited
		}
		if state != 'Z' {
			return false
		}
	}
	return true
}

// hasChildrenFiles reports whether this kernel shows a process's children
// in /proc/PID/task/TID/children, looked at once (a var: a test takes the
// other way).
var hasChildrenFiles = sync.OnceValue(supervisor.HasChildrenFiles)

// childrenReader gives a process's children, as /proc shows them now
// (internal/supervisor reads them, for its own rounds too): the children
// files of its threads, or where the kernel has none, one scan of every
// process's parent, made when it is called (once a pass of killTree).
func childrenReader() func(pid int) []int {
	if hasChildrenFiles() {
		return supervisor.ChildrenOf
	}
	byParent := supervisor.Parents()
	return func(pid int) []int { return byParent[pid] }
}

// killWait bounds how long Kill waits for the supervisor to have killed
// everything. A var so that a test can shorten it.
var killWait = 10 * time.Second

// startWait bounds how long Start waits for the supervisor's first word
// (a normal start takes milliseconds, about 60 on a 2-core machine loaded
// 15), and startPoll how often, meanwhile, it looks whether a supervisor
// that has not said it yet is stopped. A var so that a test can shorten
// it.
var startWait = 10 * time.Second

const startPoll = 20 * time.Millisecond
