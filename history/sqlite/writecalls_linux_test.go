package sqlite

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// writeCalls is the write system calls this process has made so far
// (syscw in /proc/self/io), or -1 when it cannot be read.
func writeCalls() int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(raw) {
		if v, ok := bytes.CutPrefix(line, []byte("syscw: ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// cpuTime is the CPU time (user and system) this process has used so far,
// or -1 when it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
