//go:build unix && !linux

package leftover

// localFS says why fd's file system is not one whose locks a sweep may
// trust: on Unix systems but Linux every file system is taken as one
// (no table of their types is kept here); see localfs_linux.go.
func localFS(fd int) error { return nil }

// mountPoint says whether name, in the directory open as dirfd, on device
// dev, is a mount point: here, on another device than its directory's
// (parentDev); a bind mount of the same file system is not seen.
func mountPoint(dirfd int, name string, dev, parentDev uint64) bool { return dev != parentDev }
