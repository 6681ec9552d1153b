//go:build !unix

package child

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// Group is one started child. Its methods are safe for concurrent use.
type Group struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	ended bool
}

// Start starts cmd plainly: there are no process groups to put it in, and
// no watcher; a child may outlive myelin here.
func Start(cmd *exec.Cmd) (*Group, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Group{cmd: cmd}, nil
}

// Wait waits for the child to end: cmd.Wait.
func (g *Group) Wait() error {
	return g.cmd.Wait()
}

// Signal can only kill here: sig must be os.Kill.
func (g *Group) Signal(sig os.Signal) error {
	if sig != os.Kill {
		return fmt.Errorf("child: only os.Kill can be sent to %s on this system, not %v", g.cmd.Path, sig)
	}
	g.Kill()
	return nil
}

// Kill kills the child itself. A second Kill does nothing.
func (g *Group) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return
	}
	g.ended = true
	_ = g.cmd.Process.Kill()
}
