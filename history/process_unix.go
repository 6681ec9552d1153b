//go:build unix

package history

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processExists reports whether process pid exists on this host and is not
// a zombie (a killed process its parent has not reaped yet is gone for our
// purpose). A process of another user exists too (EPERM).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// Linux: the state after the command name; elsewhere there is no
	// /proc and the signal's answer stands.
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}

// thisNode is where this process's pid means it: on Linux the boot
// (boot_id) and the pid namespace; elsewhere the host name.
func thisNode() string {
	boot, err1 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, err2 := os.Readlink("/proc/self/ns/pid")
	if err1 != nil || err2 != nil {
		host, _ := os.Hostname()
		return "host:" + host
	}
	return string(bytes.TrimSpace(boot)) + "/" + ns
}
