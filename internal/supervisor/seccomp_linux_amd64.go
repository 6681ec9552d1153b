package supervisor

import "syscall"

const (
	auditArch  = 0xc000003e // AUDIT_ARCH_X86_64
	foreignNrs = 0x40000000 // __X32_SYSCALL_BIT: x32's system calls share the audit arch
	sysSocket  = syscall.SYS_SOCKET
)
