package child

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/myelin-run/myelin/child/supervisor"
	"github.com/myelin-run/myelin/sandbox"
)

// Group is one started command under its supervisor. Kill it when the
// command has exited, or to stop it: that kills everything the command
// started. Its methods are safe for concurrent use.
type Group struct {
	cmd    *exec.Cmd
	path   string   // the command's own path (cmd.Path is the supervisor's)
	ctl    *os.File // myelin's end of the supervisor's control pipe
	status *bufio.Reader
	done   *os.File // the read end of the supervisor's status pipe
	mu     sync.Mutex
	ended  bool   // the supervisor was told to end and has
	tmp    string // the sandboxed command's temp dir, removed by Kill
}

// Start starts cmd (not yet started) under a supervisor: myelin's own
// executable, started again as the process that runs cmd as its child and
// is the subreaper of everything below it (package child/supervisor). cmd
// itself then runs the supervisor: cmd.Process is the supervisor, and
// cmd.Wait returns once the command ended and everything it started was
// killed, with the command's exit status (or its signal). cmd.SysProcAttr
// may set other fields, which apply to the supervisor and so to the
// command; it must not ask for a session or a terminal of its own
// (Setsid, Setctty, Foreground). Call Kill when the command has exited
// (after cmd.Wait) or to stop it.
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
		removeTemp(c.tmp)
		return nil, fmt.Errorf("child: making the supervisor's control pipe for %s: %w", cmd.Path, err)
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		removeTemp(c.tmp)
		return nil, fmt.Errorf("child: making the supervisor's status pipe for %s: %w", cmd.Path, err)
	}
	c.supervised(cmd, exe, attr, ctlR, doneW)
	err = cmd.Start()
	ctlR.Close()
	doneW.Close()
	if err != nil {
		ctlW.Close()
		doneR.Close()
		removeTemp(c.tmp)
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
	tmp       string // a sandboxed command's temp dir, made by commandOf
}

// commandOf is the command cmd runs: cmd's own, or, prepared by package
// sandbox, the one its arguments name, with a temp dir of its own that
// myelin makes and removes (the supervisor, confined too, can only empty
// it).
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
	made, err := os.MkdirTemp("", "myelin-sandbox-")
	if err != nil {
		return c, fmt.Errorf("child: making the temp dir of %s: %w", c.path, err)
	}
	if c.tmp, err = filepath.EvalSymlinks(made); err != nil { // the supervisor mounts it: no link on its way
		removeTemp(made)
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
			kv += supervisor.Record(supervisor.OpTemp, c.tmp)
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
// not (the supervisor is then killed and reaped).
func (g *Group) started() error {
	line, err := g.status.ReadString('\n')
	if line = strings.TrimSuffix(line, "\n"); line == supervisor.StatusOK {
		return nil
	}
	g.Kill()
	_ = g.cmd.Wait()
	if why, ok := strings.CutPrefix(line, supervisor.StatusError); ok {
		if strings.HasPrefix(why, supervisor.SandboxFailed) {
			return fmt.Errorf("%w: %s; run with --sandbox off to run commands unconfined", sandbox.ErrUnavailable, why)
		}
		return errors.New(why)
	}
	return fmt.Errorf("child: the supervisor of %s ended before it started it (%w)", g.path, err)
}

// Signal sends sig to the command's process group while the command runs:
// the supervisor sends it, so it never reaches a group whose id was given
// to another since. SIGKILL is Kill. It does nothing once the command
// ended.
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
	if g.ended {
		return nil
	}
	if _, err := g.ctl.Write([]byte{byte(s)}); err != nil && !errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("child: asking the supervisor of %s to send %v: %w", g.path, sig, err)
	}
	return nil
}

// Kill kills the command and everything it started — in its group or not,
// its children's children, whatever called setsid — and returns once they
// are all gone. The supervisor itself is reaped by cmd.Wait. A second Kill
// does nothing.
func (g *Group) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return
	}
	g.ended = true
	g.ctl.Close()
	// A supervisor stopped by someone (SIGSTOP) would never answer.
	_ = g.cmd.Process.Signal(syscall.SIGCONT)
	// Until the supervisor exits. One that does not within killWait
	// (it cannot be, short of a process stuck in the kernel) is killed,
	// which leaves what it did not kill yet but never hangs the call.
	_ = g.done.SetReadDeadline(time.Now().Add(killWait))
	if _, err := io.Copy(io.Discard, g.status); errors.Is(err, os.ErrDeadlineExceeded) {
		_ = g.cmd.Process.Kill()
	}
	g.done.Close()
	removeTemp(g.tmp)
}

// removeTemp removes a sandboxed command's temp dir and what is left in
// it (nothing, when its supervisor emptied it).
func removeTemp(tmp string) {
	if tmp != "" {
		_ = os.RemoveAll(tmp)
	}
}

// killWait bounds how long Kill waits for the supervisor to have killed
// everything.
const killWait = 10 * time.Second
