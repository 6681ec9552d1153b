// Package sandbox confines the commands myelin runs for the model
// (shell--run, and stdio MCP servers whose entry asks for it) with the
// operating system's own means (SPEC §14): they may write only the
// workspace (less its protected paths) and a private temp dir, may not
// read the user's secrets nor see the provider keys in the environment,
// and reach no network unless allowed. Where the system offers no such
// means, a command is refused with an error naming `--sandbox off`,
// never run unconfined in silence.
//
// It must not decide whether a call may run at all (package permission
// and approval do), nor start or wait for the command itself (package
// child does, and the caller waits).
package sandbox

import (
	"errors"
	"os/exec"
)

// Mode is how far commands are confined.
type Mode string

// The modes. The zero Mode is WorkspaceWrite: confined by default.
const (
	// WorkspaceWrite lets a command write the workspace (less its
	// protected paths) and its temp dir; it reads the system, not the
	// user's secrets.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly lets a command write only its temp dir.
	ReadOnly Mode = "read-only"
	// Off runs commands unconfined, with the user's rights: only when the
	// user says so (--sandbox off).
	Off Mode = "off"
)

// Policy is how the commands of one workspace are confined. Its zero
// value is WorkspaceWrite with no network.
type Policy struct {
	Mode Mode
	// Network lets commands reach the network (--sandbox-network).
	Network bool
	// Writable are more directories commands may write (a build cache
	// outside the workspace), absolute paths.
	Writable []string
	// Env are the names of more environment variables passed to
	// commands beyond the built-in allow-list.
	Env []string
}

// ErrUnavailable is wrapped by the error Apply returns where the system
// offers no sandbox: the command is refused, and the error names
// `--sandbox off`.
var ErrUnavailable = errors.New("no sandbox is available here")

// Apply prepares cmd, not yet started, to run confined by p with
// workspace as the directory it may write. It is to be started with
// package child.
func (p Policy) Apply(cmd *exec.Cmd, workspace string) error {
	if p.Mode == Off {
		return nil
	}
	return errors.New("sandbox: not built yet (issue 28 §2)")
}
