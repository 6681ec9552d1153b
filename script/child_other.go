//go:build !linux

package script

import (
	"os"
	"syscall"
)

// selfExe is the running executable.
func selfExe() (string, error) { return os.Executable() }

// engineProcAttr: elsewhere than Linux an orphaned engine ends by itself
// at its time limit plus engineGrace, or when its stdin closes.
func engineProcAttr() *syscall.SysProcAttr { return nil }

// residentBytes: unknown elsewhere than Linux (the engine is then kept
// whatever it holds, up to Pool.Scripts).
func residentBytes() int64 { return 0 }

// exited: elsewhere than Linux an engine's death is not watched; it is
// seen when its pipe ends (after a call run where it was read returns).
func exited(pid int) <-chan struct{} { return nil }
