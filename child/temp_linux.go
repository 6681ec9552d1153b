package child

import "github.com/myelin-run/myelin/internal/leftover"

// A sandboxed command's temp dir: myelin makes it, the supervisor mounts
// it writable for the command and empties it when the command ends, and
// myelin removes it (the supervisor, confined too, cannot: the directory
// is a mount in its namespace and the one holding it read-only there).
// When myelin is killed (SIGKILL, the OOM killer) the supervisor still
// empties it, but the empty directory is left; so myelin holds a shared
// flock on each temp dir it uses for as long as it uses it, and a sweep
// (package internal/leftover, which owns the lock and the sweep) removes
// the empty ones whose lock nobody holds, with rmdir alone: a supervisor
// that outlived its myelin may still be emptying one. The supervisor of
// a myelin that is gone is killing its command, which may still have the
// dir (empty) as its TMPDIR when it is removed: it is being killed.

// sandboxTemps is the kind of a sandboxed command's temp dir:
// $TMPDIR/myelin-sandbox-<pid>-<random>, locked while in use, swept when
// left and empty. Those named myelin-sandbox-<random> alone (made by a
// myelin before locks, or where the file system refused one) are never
// swept.
var sandboxTemps = &leftover.Kind{Prefix: "myelin-sandbox-", Dir: true}

// makeTemp makes a sandboxed command's temp dir in os.TempDir(), locked,
// and sweeps that directory on a goroutine of its own when it is due: at
// the process's first sandboxed command there, and at the first one 10
// minutes or more after its last sweep. The command's start does not wait
// for the sweep; its end (Remove) does, a second at most.
func makeTemp() (leftover.Dir, error) { return sandboxTemps.MakeDir("") }
