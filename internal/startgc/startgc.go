// Package startgc puts off the garbage collector's first cycle until main
// runs, and for run and chat until their first request is sent. The
// package inits of myelin allocate about 3 MB (the SDKs' tables and
// registries), close to the runtime's first heap goal of 4 MB, so
// without this a full GC cycle ran in the middle of them, over a heap that
// is nearly all live, costing a short command such as `myelin version`
// some 300 page faults and a tenth of its CPU time (docs/performance.md,
// "Cold start"). Its init raises GOGC so that the first goal is 256 MB;
// main calls Done first, which puts the setting back — but for run and
// chat, which call it once their first turn's answer begins (its first
// event: the request was sent and is being answered — after any resends
// of it, up to the retry limit): the start of a resumed conversation
// allocates what it keeps (the stored messages read and unpacked, the
// request's body: ~100 MB at 100,000 messages), and a cycle over it on
// the way doubled the unpacking's CPU and page faults ("Resuming a stored
// conversation"). Should a first turn allocate past 256 MB before its
// answer begins, the first cycle lowers GOGC to 400 for the rest of the
// wait, so that the next goal is not 65 times what it keeps. Done is
// called whatever happens to that turn, so a long-running process runs
// with the collector as configured (a chat waiting for its first line
// keeps it put off, allocating nothing).
//
// It must not change the collector of a process that does its work inside
// an init: the supervisor (its init runs before this one, being imported
// here, and never returns) and the script engine (MYELIN_SCRIPT_ENGINE=1,
// package script). Nor does it touch a GOGC the user set.
package startgc

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	// A dependency's init runs before this one: a supervisor process
	// starts and ends in it, with the collector as it was.
	_ "github.com/myelin-run/myelin/internal/supervisor"
)

// startPercent is GOGC from this init until the collector's first cycle
// or Done: with no cycle yet, the first goal is 4 MB × startPercent /
// 100, 256 MB.
const startPercent = 6400

// afterPercent is GOGC from the first cycle until Done, when that cycle
// comes first: the next goal is then five times what was kept, not 65.
const afterPercent = 400

// engineEnv is package script's variable that makes the process a script
// engine, which runs its script inside package script's init.
const engineEnv = "MYELIN_SCRIPT_ENGINE"

// restore is the GOGC to put back in Done; -1 when nothing was changed
// or it was put back — also before init has run, so that a zero value
// is never read as GOGC 0. Done may be called from several goroutines at
// once (a turn's events).
var restore = func() *atomic.Int64 {
	var r atomic.Int64
	r.Store(-1)
	return &r
}()

// mu orders Done and lower: a lowering never comes after Done put the
// setting back.
var mu sync.Mutex

func init() {
	r := putOff(os.LookupEnv)
	restore.Store(int64(r))
	if r >= 0 {
		afterFirstCycle(lower)
	}
}

// afterFirstCycle has f called once the collector's next cycle has run:
// on the cleanup of an object that nothing reaches.
func afterFirstCycle(f func()) {
	runtime.AddCleanup(new([64]byte), func(struct{}) { f() }, struct{}{})
}

// lower puts GOGC from startPercent down to afterPercent, unless Done
// has already put the setting back.
func lower() {
	mu.Lock()
	defer mu.Unlock()
	if restore.Load() >= 0 {
		debug.SetGCPercent(afterPercent)
	}
}

// putOff raises GOGC to startPercent and returns the setting to put back,
// or leaves it and returns -1 in a script engine or when GOGC is set.
func putOff(lookup func(string) (string, bool)) int {
	if v, _ := lookup(engineEnv); v == "1" {
		return -1
	}
	if _, set := lookup("GOGC"); set {
		return -1
	}
	return debug.SetGCPercent(startPercent)
}

// Done puts back the GOGC found at init; main calls it before anything
// else, run and chat once their first answer begins. Later calls do
// nothing, and write nothing (it is called on every event of an answer).
func Done() {
	if restore.Load() < 0 {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if r := restore.Swap(-1); r >= 0 {
		debug.SetGCPercent(int(r))
	}
}
