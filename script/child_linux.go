package script

import (
	"fmt"
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

// residentBytes is the memory the process holds now (its resident set),
// 0 when it cannot be read.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return resident * int64(os.Getpagesize())
}
