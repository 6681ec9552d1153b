package script

import (
	"os"
	"syscall"
)

// selfExe is the running executable. /proc/self/exe still starts it when
// the file was replaced or removed since (an upgrade while chat runs).
func selfExe() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// engineProcAttr makes the kernel kill the engine when myelin dies.
func engineProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
