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
	exe := "/proc/self/exe" // still this program when its file was replaced since
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("child: finding myelin's own executable to supervise %s: %w", cmd.Path, err)
		}
	}
	// Prepared by package sandbox: the command is the one its arguments
	// name, and the supervisor confines it, with a temp dir of its own
	// that myelin makes and removes (the supervisor, confined too, can
	// only empty it).
	path, args := cmd.Path, cmd.Args
	if len(args) == 0 {
		args = []string{path}
	}
	sandboxed := len(args) >= 3 && args[0] == supervisor.SandboxArg0
	tmp := ""
	if sandboxed {
		path, args = args[1], args[2:]
		made, err := os.MkdirTemp("", "myelin-sandbox-")
		if err != nil {
			return nil, fmt.Errorf("child: making the temp dir of %s: %w", path, err)
		}
		if tmp, err = filepath.EvalSymlinks(made); err != nil { // the supervisor mounts it: no link on its way
			removeTemp(made)
			return nil, fmt.Errorf("child: making the temp dir of %s: %w", path, err)
		}
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		removeTemp(tmp)
		return nil, fmt.Errorf("child: making the supervisor's control pipe for %s: %w", cmd.Path, err)
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		removeTemp(tmp)
		return nil, fmt.Errorf("child: making the supervisor's status pipe for %s: %w", cmd.Path, err)
	}
	first := 3 + len(cmd.ExtraFiles)
	// The supervisor gets the command's environment, working directory,
	// standard files and extra files, and hands them on.
	var env []string
	for _, kv := range cmd.Environ() {
		if strings.HasPrefix(kv, supervisor.Env+"=") { // the supervisor's own, never the command's
			continue
		}
		if sandboxed && strings.HasPrefix(kv, supervisor.SandboxEnv+"=") {
			kv += supervisor.Record(supervisor.OpTemp, tmp)
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, supervisor.Env+"="+strconv.Itoa(first))
	cmd.Path = exe
	cmd.Args = append([]string{"myelin-supervisor", path}, args...)
	cmd.ExtraFiles = append(cmd.ExtraFiles[:len(cmd.ExtraFiles):len(cmd.ExtraFiles)], ctlR, doneW)
	// A group of its own: a terminal's Ctrl-C does not reach it. It has
	// no parent-death signal: it must outlive myelin to kill what is left.
	attr.Setpgid, attr.Pgid = true, 0
	cmd.SysProcAttr = attr
	err = cmd.Start()
	ctlR.Close()
	doneW.Close()
	if err != nil {
		ctlW.Close()
		doneR.Close()
		removeTemp(tmp)
		if cmd.Dir != "" { // the kernel's error does not say it was the directory
			if _, serr := os.Stat(cmd.Dir); serr != nil {
				return nil, fmt.Errorf("%w; its directory: %w", err, serr)
			}
		}
		if sandboxed {
			return nil, fmt.Errorf("child: starting %s in namespaces of its own, for the sandbox: %w: %w; run with --sandbox off to run commands unconfined", path, sandbox.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("child: starting the supervisor of %s: %w", path, err)
	}
	g := &Group{cmd: cmd, path: path, ctl: ctlW, done: doneR, status: bufio.NewReader(doneR), tmp: tmp}
	line, err := g.status.ReadString('\n')
	if line = strings.TrimSuffix(line, "\n"); line != supervisor.StatusOK {
		g.Kill()
		_ = cmd.Wait()
		if why, ok := strings.CutPrefix(line, supervisor.StatusError); ok {
			if strings.HasPrefix(why, supervisor.SandboxFailed) {
				return nil, fmt.Errorf("%w: %s; run with --sandbox off to run commands unconfined", sandbox.ErrUnavailable, why)
			}
			return nil, errors.New(why)
		}
		return nil, fmt.Errorf("child: the supervisor of %s ended before it started it (%w)", path, err)
	}
	return g, nil
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
