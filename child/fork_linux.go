package child

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
)

// setDeathSignal makes the child get SIGKILL when the thread that forked
// it exits: with onForkThread, when myelin exits.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

var (
	forks     = make(chan func())
	forkerRun sync.Once
)

// onForkThread runs start (a cmd.Start) on the fork thread: a thread that
// one goroutine locked for itself and never unlocks, so it lives as long
// as the process and a child's parent-death signal fires only when myelin
// is gone. Starts wait for each other; a fork is short (the kernel's
// vfork returns at the child's exec).
func onForkThread(start func() error) error {
	forkerRun.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not exit
			for f := range forks {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	forks <- func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("child: starting the process panicked: %v", p)
			}
		}()
		done <- start()
	}
	return <-done
}
