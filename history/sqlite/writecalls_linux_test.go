package sqlite

import (
	"bytes"
	"os"
	"strconv"
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
