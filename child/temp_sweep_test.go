//go:build linux

package child

// This file tests the sweep's edges the review found untested: a maker
// that finds a sweep holding its new dir's lock, and a FIFO named like a
// temp dir.

import (
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A sweep that holds a just-made dir's lock (exclusive) when its maker
// locks it: the maker takes it for swept (errTaken) and makes another,
// under the swept name pattern; it does not fall back to the name no
// sweep touches, as it would if the refusal were taken for a file system
// that refuses locks.
func TestAMakerThatFindsASweepHoldingItsDirsLockMakesAnother(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	sweepDue(dir, time.Now())
	var taken string
	held := -1
	afterMkdir = func(made string) {
		if taken != "" {
			return
		}
		taken = made
		fd, err := unix.Open(made, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Error(err)
		}
		held = fd
	}
	t.Cleanup(func() { afterMkdir = nil })
	tmp, err := makeTemp()
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.remove()
	if held >= 0 {
		unix.Close(held)
	}
	if taken == "" {
		t.Fatal("the maker made no dir through afterMkdir")
	}
	if tmp.path == taken || tmp.lock == nil || !sweepable(filepath.Base(tmp.path)) {
		t.Fatalf("the maker took %s (locked %v; swept name %v), the dir a sweep held being %s", tmp.path, tmp.lock != nil, sweepable(filepath.Base(tmp.path)), taken)
	}
}

// A FIFO named like a temp dir does not hang a sweep (it is opened
// O_DIRECTORY, which refuses it at once) and is not removed.
func TestASweepPassesAFIFONamedLikeATempDir(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, tempPrefix+"1-2")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- sweepTemps(dir) }()
	select {
	case n := <-done:
		if n != 0 {
			t.Errorf("the sweep removed %d entries; want none", n)
		}
	case <-time.After(10 * time.Second): // a hang guard, not a measure
		t.Fatal("a sweep hangs on a FIFO named like a temp dir")
	}
	if err := unix.Access(fifo, unix.F_OK); err != nil {
		t.Fatalf("the FIFO: %v", err)
	}
}
