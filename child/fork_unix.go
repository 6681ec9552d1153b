//go:build unix && !linux

package child

import "syscall"

// setDeathSignal does nothing: only Linux has a parent-death signal with
// the semantics this package relies on; the watcher alone guards the group.
func setDeathSignal(*syscall.SysProcAttr) {}

// onForkThread runs start where it is: without a parent-death signal the
// forking thread does not matter.
func onForkThread(start func() error) error { return start() }
