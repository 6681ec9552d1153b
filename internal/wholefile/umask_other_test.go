//go:build !unix

package wholefile

import "testing"

// withUmask runs f: there is no umask to set here.
func withUmask(t *testing.T, mask int, f func()) {
	t.Helper()
	if mask != 0 {
		t.Skip("no umask on this system")
	}
	f()
}

// readOnlyDir skips t: no portable way to make a directory refuse files.
func readOnlyDir(t *testing.T, dir string) { t.Skip("no read-only directory here") }
