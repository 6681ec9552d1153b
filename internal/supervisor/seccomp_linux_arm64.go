package supervisor

import "syscall"

const (
	auditArch  = 0xc00000b7 // AUDIT_ARCH_AARCH64
	foreignNrs = 0
	sysSocket  = syscall.SYS_SOCKET
)
