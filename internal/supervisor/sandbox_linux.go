package supervisor

import (
	"syscall"
	"unsafe"
)

// The sandbox, when SandboxEnv is set (package sandbox writes it): the
// supervisor was started in a mount namespace of its own (and a network
// namespace unless the network is allowed), and in a user namespace too
// unless myelin runs as root, where it holds the capabilities to mount.
// On its main thread, the one that forks the command, it
//
//  1. makes its mounts slaves (none reaches myelin's namespace), makes
//     every mount read-only but the writable directories and the
//     command's temp dir (TMPDIR, made by myelin), so that chmod, chown,
//     utimes and extended attributes, which Landlock does not rule, are
//     refused outside them too; bind-mounts the protected paths read-only
//     (Landlock cannot carve a read-only hole out of a writable tree);
//     mounts a private tmpfs on /dev/shm; brings the namespace's loopback
//     up;
//  2. empties its capability bounding, ambient and inheritable sets, so
//     that the command gets no capability at exec, even as root, and sets
//     no_new_privs (set-user-ID bits and file capabilities do nothing);
//  3. restricts itself with Landlock to the rules of the spec: reads,
//     writes, and where the kernel has them (ABI 6), no signals to
//     processes outside and no abstract unix sockets outside;
//  4. without the network, refuses path Unix sockets and io_uring with a
//     seccomp filter (seccomp_linux.go).
//
// The command, forked from that thread, inherits all of it. The other
// threads of the supervisor (its waiters) are not restricted and touch
// nothing but its pipes.

// A spec is a list of records, each an operation letter, the length of
// its path in decimal, a colon, and the path (paths may hold any byte
// but NUL). The operations:
const (
	OpRead     = 'r' // read, list and execute the path and all below it
	OpList     = 'd' // list the directory only (its entries are ruled one by one)
	OpWrite    = 'w' // everything on the path and below it
	OpDevice   = 'f' // read and write a device file (/dev/null), no ioctl
	OpProtect  = 'p' // bind-mount the path read-only over itself
	OpShm      = 's' // mount a private tmpfs on the directory, writable
	OpTemp     = 't' // the command's temp dir (TMPDIR), made by myelin: writable
	OpMountRW  = 'm' // keep the directory writable when the rest is made read-only
	OpLoopback = 'l' // bring the network namespace's loopback up (no path)
	OpNoUnix   = 'u' // refuse Unix sockets and io_uring with seccomp (no path): seccomp_linux.go
)

// SandboxFailed is the prefix of the status line when the sandbox could
// not be set up; package child makes it an error wrapping
// sandbox.ErrUnavailable.
const SandboxFailed = "the sandbox could not be set up: "

type rule struct {
	op   byte
	path string
}

// Record is one record of a spec: op and path.
func Record(op byte, path string) string {
	return string(op) + itoa(len(path)) + ":" + path
}

// parseSpec reads the records of a spec.
func parseSpec(s string) ([]rule, bool) {
	var out []rule
	for len(s) > 0 {
		op := s[0]
		i := 1
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			n = n*10 + int(s[i]-'0')
			i++
			if n > 1<<20 {
				return nil, false
			}
		}
		if i >= len(s) || s[i] != ':' || len(s) < i+1+n {
			return nil, false
		}
		out = append(out, rule{op, s[i+1 : i+1+n]})
		s = s[i+1+n:]
	}
	return out, true
}

// Landlock's system calls and constants (linux/landlock.h).
const (
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446

	llCreateRulesetVersion = 1
	llRulePathBeneath      = 1

	llExecute    = 1 << 0
	llWriteFile  = 1 << 1
	llReadFile   = 1 << 2
	llReadDir    = 1 << 3
	llRemoveDir  = 1 << 4
	llRemoveFile = 1 << 5
	llMakeChar   = 1 << 6
	llMakeDir    = 1 << 7
	llMakeReg    = 1 << 8
	llMakeSock   = 1 << 9
	llMakeFifo   = 1 << 10
	llMakeBlock  = 1 << 11
	llMakeSym    = 1 << 12
	llRefer      = 1 << 13 // ABI 2
	llTruncate   = 1 << 14 // ABI 3
	llIoctlDev   = 1 << 15 // ABI 5

	llScopeAbstractUnix = 1 << 0 // ABI 6
	llScopeSignal       = 1 << 1 // ABI 6

	// the rights a rule on a file (not a directory) may hold
	llFileRights = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev
	llReadRights = llExecute | llReadFile | llReadDir
)

// LandlockABI is the Landlock ABI version the kernel offers, or 0 (also
// when it is disabled).
func LandlockABI() int {
	v, _, e := syscall.RawSyscall(sysLandlockCreateRuleset, 0, 0, llCreateRulesetVersion)
	if e != 0 {
		return 0
	}
	return int(v)
}

// handledFS are the file system rights an ABI knows: all of them are
// handled, so that whatever a rule does not grant is denied.
func handledFS(abi int) uint64 {
	h := uint64(1<<13 - 1) // ABI 1: execute … make_sym
	if abi >= 2 {
		h |= llRefer
	}
	if abi >= 3 {
		h |= llTruncate
	}
	if abi >= 5 {
		h |= llIoctlDev
	}
	return h
}

// setUpSandbox applies the spec to the calling thread (which must be the
// one that forks the command) and returns the command's temp dir, or why
// it failed.
func setUpSandbox(spec string) (tmp string, why string) {
	rules, ok := parseSpec(spec)
	if !ok {
		return "", "its description is malformed"
	}
	abi := LandlockABI()
	if abi < 1 {
		return "", "the kernel offers no Landlock (it is not built in, or not enabled with lsm=…,landlock)"
	}
	fail := func(what string, err error) (string, string) {
		return "", what + ": " + err.Error()
	}
	// The working directory is looked up again once the mounts are made,
	// so that it is the writable mount of the workspace, not the
	// read-only one below it.
	wd, err := syscall.Getwd()
	if err != nil {
		return fail("finding the working directory", err)
	}
	// No mount made here reaches the mount namespace myelin is in (a
	// shared /, as systemd makes it): without a user namespace (root)
	// the new namespace's mounts would propagate back.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SLAVE, ""); err != nil {
		return fail("keeping the mounts to this namespace", err)
	}
	var writable []string
	for _, r := range rules {
		switch r.op {
		case OpTemp:
			tmp = r.path
			writable = append(writable, tmp)
		case OpMountRW:
			writable = append(writable, r.path)
		}
	}
	// The writable directories are mounts of their own, then everything
	// is made read-only (chmod, chown, utimes and xattrs, which Landlock
	// does not rule, with it), then the writable ones writable again.
	for _, dir := range writable {
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fail("mounting "+dir+" over itself", err)
		}
	}
	if err := mountSetattr("/", atRecursive, mountAttrRdonly, 0); err != nil {
		return fail("making the file system read-only", err)
	}
	for _, dir := range writable {
		// With the mounts below it; where one of them was read-only
		// before (a read-only file system), which may not be undone, the
		// directory's own mount only; and where that one was, it stays so.
		err := mountSetattr(dir, atRecursive, 0, mountAttrRdonly)
		if err == syscall.EPERM {
			err = mountSetattr(dir, 0, 0, mountAttrRdonly)
		}
		if err != nil && err != syscall.EPERM {
			return fail("making "+dir+" writable", err)
		}
	}
	for _, r := range rules {
		switch r.op {
		case OpProtect:
			if err := protect(r.path); err != nil {
				return fail("making "+r.path+" read-only", err)
			}
		case OpShm:
			if err := syscall.Mount("tmpfs", r.path, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil && err != syscall.ENOENT {
				return fail("mounting a private tmpfs on "+r.path, err)
			}
		case OpLoopback:
			if err := loopbackUp(); err != nil {
				return fail("bringing the loopback interface up", err)
			}
		}
	}
	if err := syscall.Chdir(wd); err != nil {
		return fail("entering the working directory "+wd+" again", err)
	}
	if err := dropCapabilities(); err != nil {
		return fail("dropping capabilities", err)
	}
	if tmp != "" {
		rules = append(rules, rule{OpWrite, tmp})
	}
	if err := landlock(abi, rules); err != "" {
		return "", err
	}
	for _, r := range rules {
		if r.op == OpNoUnix {
			if err := noUnixSockets(); err != "" {
				return "", err
			}
			break
		}
	}
	return tmp, ""
}

// mountSetattr sets and clears attributes of the mount at path (and of
// the mounts below it with atRecursive): mount_setattr(2), Linux 5.12.
func mountSetattr(path string, flags uintptr, set, clear uint64) error {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	attr := struct{ set, clr, propagation, userns uint64 }{set: set, clr: clear}
	_, _, e := syscall.Syscall6(sysMountSetattr, atFdcwd, uintptr(unsafe.Pointer(p)), flags, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return e
	}
	return nil
}

const (
	sysMountSetattr = 442
	atFdcwd         = ^uintptr(99) // -100
	atRecursive     = 0x8000
	mountAttrRdonly = 1
)

// protect bind-mounts path read-only over itself. A path that is not
// there is nothing to protect; one that became a symbolic link since
// package sandbox looked is refused (a mount would follow it).
func protect(path string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		if err == syscall.ENOENT {
			return nil
		}
		return err
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		return syscall.ELOOP
	}
	if err := syscall.Mount(path, path, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return err
	}
	// A remount must keep the flags the mount was locked with (nosuid,
	// nodev, noexec, atime) or a user namespace may not make it.
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		return err
	}
	flags := uintptr(syscall.MS_REMOUNT | syscall.MS_BIND | syscall.MS_RDONLY)
	for _, f := range [][2]int64{
		{2, syscall.MS_NOSUID}, {4, syscall.MS_NODEV}, {8, syscall.MS_NOEXEC},
		{1024, syscall.MS_NOATIME}, {2048, syscall.MS_NODIRATIME}, {4096, syscall.MS_RELATIME},
	} {
		if int64(fs.Flags)&f[0] != 0 { // Flags is int32 on 32-bit Linux
			flags |= uintptr(f[1])
		}
	}
	return syscall.Mount("", path, "", flags, "")
}

// loopbackUp sets IFF_UP on lo, so that a command may serve and reach
// itself on 127.0.0.1 inside its network namespace (a test's server).
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr [40]byte
	copy(ifr[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return e
	}
	*(*uint16)(unsafe.Pointer(&ifr[16])) |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return e
	}
	return nil
}

// removeAll removes path and everything below it, never following a
// symbolic link. What it cannot remove stays.
func removeAll(path string) {
	if path == "" {
		return
	}
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil {
		return
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		_ = syscall.Unlink(path)
		return
	}
	_ = syscall.Chmod(path, 0o700) // a directory the command made unwritable
	names, _ := dirNames(path)
	for _, n := range names {
		if n != "." && n != ".." {
			removeAll(path + "/" + n)
		}
	}
	_ = syscall.Rmdir(path)
}

// dropCapabilities empties the bounding set (no capability after exec,
// even for root), the ambient and inheritable sets, and sets
// no_new_privs, which Landlock needs and which makes set-user-ID bits and
// file capabilities do nothing.
func dropCapabilities() error {
	for c := 0; c < 64; c++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, uintptr(c), 0); e != 0 {
			if e == syscall.EINVAL { // past the last capability
				break
			}
			return e
		}
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0); e != 0 && e != syscall.EINVAL {
		return e
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

const (
	oPath                = 0x200000
	prCapbsetDrop        = 24
	prSetNoNewPrivs      = 38
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
)

// landlock restricts the calling thread to the rules.
func landlock(abi int, rules []rule) string {
	handled := handledFS(abi)
	attr := struct{ fs, net, scoped uint64 }{fs: handled}
	size := uintptr(8)
	if abi >= 6 {
		attr.scoped = llScopeSignal | llScopeAbstractUnix
		size = 24
	}
	rs, _, e := syscall.RawSyscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return "creating a Landlock ruleset: " + e.Error()
	}
	defer syscall.Close(int(rs))
	for _, r := range rules {
		var rights uint64
		switch r.op {
		case OpRead:
			rights = llReadRights
		case OpList:
			rights = llReadDir
		case OpWrite, OpShm:
			rights = handled
		case OpDevice:
			rights = llReadFile | llWriteFile
		default:
			continue
		}
		fd, err := syscall.Open(r.path, oPath|syscall.O_CLOEXEC, 0)
		if err == syscall.ENOENT || err == syscall.ENOTDIR {
			continue // gone since package sandbox looked: nothing to allow
		}
		if err != nil {
			return "opening " + r.path + " for a Landlock rule: " + err.Error()
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			syscall.Close(fd)
			return "looking at " + r.path + " for a Landlock rule: " + err.Error()
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			rights &= llFileRights
		}
		rights &= handled
		if rights == 0 {
			syscall.Close(fd)
			continue
		}
		pb := struct {
			allowed uint64
			fd      int32
		}{rights, int32(fd)}
		// struct landlock_path_beneath_attr is packed: 12 bytes, the
		// fd right after the rights (Go puts it there too; the padding
		// after it is not read).
		_, _, e := syscall.RawSyscall6(sysLandlockAddRule, rs, llRulePathBeneath, uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
		syscall.Close(fd)
		if e != 0 {
			return "adding a Landlock rule for " + r.path + ": " + e.Error()
		}
	}
	if _, _, e := syscall.RawSyscall(sysLandlockRestrictSelf, rs, 0, 0); e != 0 {
		return "restricting the command with Landlock: " + e.Error()
	}
	return ""
}
