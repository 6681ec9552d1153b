package script

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
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

// exited is closed once process pid (a child of this process) has exited
// or been reaped, without reaping it: waitid with WNOWAIT leaves the
// zombie, its status and the rest of its pipe for conn.wait and the
// reader (os/exec's Wait would close the read end of its stdout and lose
// what it wrote last). One thread waits in the kernel per engine.
func exited(pid int) <-chan struct{} {
	const (
		pPID    = 1         // P_PID
		wExited = 4         // WEXITED
		wNoWait = 0x1000000 // WNOWAIT
	)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		var info [128]byte // siginfo_t
		for {
			_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
			if errno != syscall.EINTR {
				return // exited, or ECHILD: reaped already
			}
		}
	}()
	return gone
}
