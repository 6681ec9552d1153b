package supervisor

import (
	"syscall"
	"unsafe"
)

// A path Unix socket (Docker's /run/docker.sock, an ssh agent's, a
// database's) leads to a daemon outside the sandbox that acts with its
// own rights: Landlock does not rule connecting to one, and a network
// namespace does not separate them. Without the network (OpNoUnix), the
// supervisor therefore also installs a seccomp filter on the thread that
// forks the command, after no_new_privs, which
//
//   - makes socket(AF_UNIX, …) fail with EPERM (socketpair stays: the
//     pair it makes reaches nothing outside);
//   - makes io_uring_setup fail with EPERM (an io_uring makes sockets
//     past seccomp);
//   - refuses every system call of another ABI than the supervisor's own
//     (i386's int 0x80 from an x86_64 process, x32's numbers, arm32),
//     which the checks above would not see, with EPERM.
//
// Everything else is allowed: the filter is a handful of instructions,
// run on each system call of the command.

const (
	prSetSeccomp      = 22
	seccompModeFilter = 2

	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000

	sysIoUringSetup = 425 // the same on every architecture (Linux 5.1)
	afUnix          = 1

	// offsets in struct seccomp_data
	seccompNr   = 0
	seccompArch = 4
	seccompArg0 = 16 // the low 32 bits on little-endian machines (the domain is an int)
)

// noUnixFilter is the program of the filter (see above) for the
// architecture built for, or nil where none is written (the sandbox is
// then refused, not set up without it).
func noUnixFilter() []syscall.SockFilter {
	if auditArch == 0 {
		return nil
	}
	stmt := func(code uint16, k uint32) syscall.SockFilter { return syscall.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) syscall.SockFilter {
		return syscall.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	const (
		ld  = syscall.BPF_LD | syscall.BPF_W | syscall.BPF_ABS
		jeq = syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K
		jge = syscall.BPF_JMP | syscall.BPF_JGE | syscall.BPF_K
		ret = syscall.BPF_RET | syscall.BPF_K
	)
	// The jumps count the instructions to skip; the two returns end the
	// program, so each jump is to "allow" or "deny" by its distance.
	prog := []syscall.SockFilter{
		stmt(ld, seccompArch),
		jump(jeq, auditArch, 1, 0),
		stmt(ret, seccompRetErrno|uint32(syscall.EPERM)), // another ABI
		stmt(ld, seccompNr),
	}
	if foreignNrs != 0 { // x32's numbers, under x86_64's audit arch
		prog = append(prog,
			jump(jge, foreignNrs, 0, 1),
			stmt(ret, seccompRetErrno|uint32(syscall.EPERM)))
	}
	prog = append(prog,
		jump(jeq, sysIoUringSetup, 4, 0), // to deny
		jump(jeq, sysSocket, 0, 2),       // not socket: to allow
		stmt(ld, seccompArg0),
		jump(jeq, afUnix, 1, 0), // to deny
		stmt(ret, seccompRetAllow),
		stmt(ret, seccompRetErrno|uint32(syscall.EPERM)),
	)
	return prog
}

// noUnixSockets installs the filter on the calling thread, which must
// have set no_new_privs.
func noUnixSockets() string {
	prog := noUnixFilter()
	if prog == nil {
		return "no seccomp filter against Unix sockets is written for this architecture; run with --sandbox-network to run commands without it"
	}
	fprog := syscall.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return "installing the seccomp filter against Unix sockets: " + e.Error()
	}
	return ""
}
