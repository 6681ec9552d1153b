package sqlite

import (
	"os"
	"syscall"
)

// syncData syncs f's data to disk, and of its metadata what reading the
// data back needs (its size), not its times: fdatasync, what SQLite uses
// where the system has it. The log is written in place once it has grown
// (a checkpoint starts it over from its beginning), so most syncs change
// no metadata a read needs.
// fd is f's descriptor, taken once (os.File.Fd costs two fcntl calls).
func syncData(_ *os.File, fd uintptr) error {
	for {
		err := syscall.Fdatasync(int(fd))
		if err != syscall.EINTR {
			return err
		}
	}
}
