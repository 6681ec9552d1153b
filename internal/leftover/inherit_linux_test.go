package leftover

// This file tests the second review's findings: a lock's descriptor
// never reaches a command started meanwhile, and a sweep stays on the
// left directory's file system.

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Files made on two goroutines while a third starts commands: no command
// inherits a file's descriptor (another command's output, and its lock).
// Before, Create duplicated the descriptor and set close-on-exec after,
// and a command started between the two inherited it (within ~50 starts).
func TestAFileMadeIsNeverInheritedByACommandStartedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	k := files()
	k.due(dir, time.Now())
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				f, err := k.Create()
				if err != nil {
					t.Error(err)
					return
				}
				os.Remove(f.Name())
				f.Close()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	leaked, runs := "", 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && leaked == ""; runs++ {
		out, err := exec.Command("/bin/sh", "-c", `for f in /proc/$$/fd/*; do readlink "$f"; done; true`).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, k.Prefix) {
				leaked = l
			}
		}
	}
	if leaked != "" {
		t.Fatalf("after %d commands started, one inherited %s", runs, leaked)
	}
}

// A left directory of a kind removed whole, with a directory from outside
// $TMPDIR bind-mounted in it (a server's mount, a FUSE mount outliving
// it): the sweep leaves the mount point, and what is mounted there, as
// rm --one-file-system does. Root only: the mount is made in a mount
// namespace of the test's own thread.
func TestASweepNeverEmptiesAFileSystemMountedInALeftDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a bind mount needs root")
	}
	dir := t.TempDir()
	outside := mkdir(t, filepath.Join(t.TempDir(), "outside"))
	precious := write(t, filepath.Join(outside, "precious"))
	k := fullDirs()
	left := mkdir(t, filepath.Join(dir, k.Prefix+"1-2.server"))
	write(t, filepath.Join(left, "own"))
	mnt := mkdir(t, filepath.Join(left, "mnt"))
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, and its namespace, end with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- err
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- err
			return
		}
		if err := unix.Mount(outside, mnt, "", unix.MS_BIND, ""); err != nil {
			done <- err
			return
		}
		k.Sweep(dir)
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Skipf("a mount namespace of the test's own: %v", err)
	}
	if _, err := os.Lstat(precious); err != nil {
		t.Fatalf("a file of a file system mounted in a left dir was removed by the sweep: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(left, "own")); err == nil {
		t.Fatal("the left dir's own file was not removed")
	}
}
