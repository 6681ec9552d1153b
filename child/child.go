// Package child starts the processes myelin runs for a tool call — a
// shell--run command, a stdio MCP server — so that none of them outlives
// myelin, however myelin stops: a normal exit, a panic, a signal, or
// SIGKILL, where no Go code runs at all (contract §7: nothing myelin starts
// outlives it).
//
// On Unix each child gets a process group of its own, and in that group a
// watcher: a tiny `/bin/sh` that reads its stdin, a pipe whose write end
// only myelin holds (close-on-exec, so no other child inherits it). When
// myelin dies, however it dies, the kernel closes that write end; the
// watcher's read returns and it kills its own group with SIGKILL: the
// child and everything the child started that stayed in the group (bash's
// own children, `sleep 30 &`). The watcher ignores SIGHUP, SIGINT, SIGQUIT
// and SIGTERM, so a SIGTERM sent to the group asks the child to stop
// without disarming the watcher. The group's id is the watcher's pid, and
// the watcher is reaped only when the group is killed, so the id cannot be
// reused by another group while a Group can still signal it.
//
// On Linux the child also gets the parent-death signal (SIGKILL), in case
// the watcher was killed by someone. That signal fires when the *thread*
// that forked the child exits, not the process, and the Go runtime ends a
// thread when a goroutine locked to it returns without unlocking; so every
// child is forked from one goroutine locked to a thread of its own that
// never exits.
//
// Elsewhere (not Unix) a child is started plainly and Kill kills only it.
//
// Package child must not decide when a child should stop (its callers
// do, with Signal and Kill), nor wait for the child itself (callers call
// cmd.Wait as usual), nor read or write its input and output. A process
// that leaves the group on purpose (setsid, setpgid: a daemon) is out of
// its reach.
package child
