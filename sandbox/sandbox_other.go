//go:build !linux

package sandbox

import (
	"os/exec"
	"runtime"
)

// apply refuses: only Linux has a sandbox in myelin so far. macOS's
// Seatbelt (sandbox-exec) is not used: it was not tested here.
func (p Policy) apply(cmd *exec.Cmd, workspace string) error {
	return unavailable("myelin has a sandbox for commands only on Linux, not on " + runtime.GOOS)
}
