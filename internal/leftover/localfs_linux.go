package leftover

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// localFS says why fd's file system is not one whose locks a sweep may
// trust (nil for one it may): a lock is what tells an entry in use from
// one left, and on a network file system a flock may not reach the other
// hosts sharing the directory (Linux's NFS client keeps a directory's
// flock on its own host), so a myelin of another host would sweep an
// entry in use. Only the local file systems listed are trusted; elsewhere
// the maker takes the name no sweep takes.
func localFS(fd int) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return err
	}
	switch uint32(st.Type) { // uint32: on 32-bit systems Type is an int32, and a magic with its high bit set would sign-extend
	case 0xEF53, // ext2, ext3, ext4
		0x58465342, // xfs
		0x9123683E, // btrfs
		0x01021994, // tmpfs
		0xF2F52010, // f2fs
		0x2FC12FC1, // zfs
		0x794C7630, // overlayfs
		0x858458F6, // ramfs
		0x73717368: // squashfs (read-only: nothing made, nothing swept)
		return nil
	}
	return fmt.Errorf("its file system (type %#x) is not one whose locks are known to reach every process sharing it", uint32(st.Type))
}

// mountPoint says whether name, in the directory open as dirfd, on device
// dev (its stat's), is a mount point: the root of a mount, a bind mount
// of a directory of the same file system included (statx's
// STATX_ATTR_MOUNT_ROOT, Linux 5.8 and later), or, where the kernel does
// not say, on another device than its directory's (parentDev). An
// error says it is one: what cannot be looked at is left.
func mountPoint(dirfd int, name string, dev, parentDev uint64) bool {
	var stx unix.Statx_t
	if err := unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO, &stx); err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			return dev != parentDev // no statx here (a kernel before 4.11, a seccomp profile): the device alone
		}
		return true
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	}
	return dev != parentDev
}
