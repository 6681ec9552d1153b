//go:build unix && !linux

package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// watcherShell runs the watcher. /bin/sh is on every Unix myelin runs on.
const watcherShell = "/bin/sh"

// watcherScript waits for its stdin to close and kills its own process
// group (kill's pid 0). The signals a terminal, a polite stop or a
// program's own use send are ignored, so only SIGKILL or the end of its
// stdin ends it.
const watcherScript = `trap '' HUP INT QUIT TERM PIPE USR1 USR2 ALRM; read _; kill -9 0`

// Group is one started child in a process group that dies with myelin.
// Kill it when the child has exited, or to stop it: that kills what the
// child left running in its group. Its methods are safe for concurrent use.
type Group struct {
	cmd     *exec.Cmd
	pgid    int       // the watcher's pid
	watcher *exec.Cmd // the group's watcher
	hold    *os.File  // the write end of the watcher's stdin
	mu      sync.Mutex
	ended   bool // the group was killed and its watcher reaped
}

// Start starts cmd (not yet started) in a new process group with a watcher
// that kills the group when myelin dies. cmd.SysProcAttr may set other fields; it must
// not ask for a session or a terminal of its own (Setsid, Setctty,
// Foreground), which would take the child out of the group. Call Kill when
// the child has exited (after Wait) or to stop it.
func Start(cmd *exec.Cmd) (*Group, error) {
	if cmd.Process != nil {
		return nil, fmt.Errorf("child: %s was already started", cmd.Path)
	}
	if cmd.Err != nil { // exec.Command could not find it: no watcher needed
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
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("child: making the watcher's pipe for %s: %w", cmd.Path, err)
	}
	watcher := exec.Command(watcherShell, "-c", watcherScript)
	watcher.Stdin = r
	watcher.Dir = "/"
	watcher.Env = []string{}
	watcher.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = watcher.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("child: starting the watcher of %s (%s): %w", cmd.Path, watcherShell, err)
	}
	g := &Group{cmd: cmd, pgid: watcher.Process.Pid, watcher: watcher, hold: w}
	attr.Setpgid, attr.Pgid = true, g.pgid
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		g.Kill()
		if cmd.Dir != "" { // the kernel's error does not say it was the directory
			if _, serr := os.Stat(cmd.Dir); serr != nil {
				return nil, fmt.Errorf("%w; its directory: %w", err, serr)
			}
		}
		return nil, err
	}
	return g, nil
}

// Wait waits for the child to end: cmd.Wait (no supervisor stands
// between them here).
func (g *Group) Wait() error {
	return g.cmd.Wait()
}

// Signal sends sig to every process in the group; the watcher ignores it
// (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM)
// and stays armed. SIGKILL is Kill. It does nothing once the group was
// killed.
func (g *Group) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
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
	if err := syscall.Kill(-g.pgid, s); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("child: signalling the process group %d of %s: %w", g.pgid, g.cmd.Path, err)
	}
	return nil
}

// Kill sends SIGKILL to the whole group — the child, whatever it left
// running in the group, the watcher — and reaps the watcher. The child
// itself is reaped by Wait (cmd.Wait). A second Kill does nothing.
func (g *Group) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return
	}
	g.ended = true
	_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	g.hold.Close()
	_ = g.watcher.Wait()
}
