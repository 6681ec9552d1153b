//go:build !unix

package history

// processExists cannot tell on this system: a holder is alive until its
// lease runs out.
func processExists(pid int) bool { return true }
