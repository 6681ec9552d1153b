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
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
