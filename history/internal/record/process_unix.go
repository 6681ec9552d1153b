//go:build unix

package record

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// ProcessExists reports whether process pid exists on this host and is not
// a zombie (a killed process its parent has not reaped yet is gone for our
// purpose). A process of another user exists too (EPERM).
func ProcessExists(pid int) bool {
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

// ThisNode is where this process's pid means it: on Linux the boot
// (boot_id) and the pid namespace; elsewhere the host name.
func ThisNode() string {
	boot, err1 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, err2 := os.Readlink("/proc/self/ns/pid")
	if err1 != nil || err2 != nil {
		host, _ := os.Hostname()
		return "host:" + host
	}
	return string(bytes.TrimSpace(boot)) + "/" + ns
}
