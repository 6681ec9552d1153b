//go:build !linux

package sqlite

import "time"

// writeCalls is -1: the write system calls of a process are counted on
// Linux only (/proc/self/io).
func writeCalls() int64 { return -1 }

// cpuTime is -1: the CPU time of the process is read on Linux only.
func cpuTime() time.Duration { return -1 }
