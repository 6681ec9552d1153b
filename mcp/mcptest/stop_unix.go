//go:build unix

package mcptest

import (
	"os"
	"syscall"
)

// stopParent stops this process's parent (SIGSTOP): under myelin, the
// supervisor the server runs under.
func stopParent() { _ = syscall.Kill(os.Getppid(), syscall.SIGSTOP) }
