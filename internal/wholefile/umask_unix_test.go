//go:build unix

package wholefile

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// withUmask runs f under the process umask mask, then puts the old one
// back. The umask is the process's: the tests that set it are not parallel.
func withUmask(t *testing.T, mask int, f func()) {
	t.Helper()
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

// readOnlyDir makes dir refuse new files: mode 0500, or, for root (whom
// modes do not stop), the immutable attribute. It skips t when neither
// stops a file being made there.
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		return
	}
	if err := exec.Command("chattr", "+i", dir).Run(); err != nil {
		t.Skipf("running as root, and chattr +i %s: %v: no directory refuses root here", dir, err)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
}
