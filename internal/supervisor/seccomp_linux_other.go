//go:build linux && !amd64 && !arm64

package supervisor

// No filter is written for this architecture: a sandbox without the
// network is refused rather than set up without it.
const (
	auditArch  = 0
	foreignNrs = 0
	sysSocket  = 0
)
