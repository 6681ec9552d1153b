//go:build !unix

package record

// ProcessExists cannot tell on this system: a holder is alive until its
// lease runs out.
func ProcessExists(pid int) bool { return true }

// ThisNode cannot tell on this system: holders are judged by their lease.
func ThisNode() string { return "" }
