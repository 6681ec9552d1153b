package sqlite

// This file is the VFS the store's connection opens its file with
// (logVFS): SQLite's own default VFS, except that what a transaction
// writes to the write-ahead log reaches the file in one write instead of
// two a frame (a frame's 24-byte header, then its page). On the machines
// issue 34 measured, a write to a file costs ~8–11 µs of system time, and
// a round's two commits wrote twelve: that was a third of what the
// store's round cost beyond its disk sync (docs/performance.md, "The
// durable round").
//
// The log's writes are only gathered, never reordered or dropped, and
// never held past the commit that wrote them:
//
//   - a write that does not follow the bytes gathered (a frame written
//     again in place, a new log's header) first writes what was gathered;
//   - the page of a commit's last frame (its header says how large the
//     database is then, which no other frame's does) is written with
//     everything gathered before it, by that page's own write: an error
//     (a full disk) is that write's, so SQLite fails the commit, as it
//     would have;
//   - every other use of the log (a read, a sync, its size, a truncation,
//     closing it, a file control) first writes what was gathered;
//   - before SQLite makes a commit visible to any reader, it calls the
//     store file's shared-memory barrier (walIndexWriteHdr): that barrier
//     first writes whatever any log of the process has gathered, so that
//     no reader, in this process or another, can be told of a frame that
//     is not in the file. (The commit's own page has been written by then:
//     this is a second guard, which in practice finds nothing.)
//
// So when a commit returns its frames are in the file, as without this
// VFS: a crash of the process keeps it, and a synced write's fdatasync of
// the log (logsync.go) covers it. A crash while a transaction is being
// written loses frames that no commit had made part of the log, as SQLite
// writing them one by one could. Files other than a log and the store's
// file (the rollback journal of an upgrade, temporary files) are SQLite's
// own, untouched.
//
// The VFS relies on the store's log being indexed in shared memory (WAL
// mode, not locking_mode=EXCLUSIVE, which the store never sets) for its
// second guard only.

import (
	"errors"
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// logVFS is the name the store's VFS is registered under.
const logVFS = "myelin-log"

// logGather bounds what a log gathers before it writes: a transaction
// writing more (a large result appended) writes every logGather bytes.
const logGather = 1 << 20

// logWrite1 bounds one write of what a log gathered: SQLite's unix VFS
// writes at most 128 KiB less a byte at once (seekAndWriteFd masks the
// count with 0x1ffff: a larger one would be cut short, and reported as a
// full disk).
const logWrite1 = 64 << 10

// frameHeader is the size of a log frame's header.
const frameHeader = 24

// registerLogVFS registers logVFS, once, over the default VFS.
var registerLogVFS = sync.OnceValue(func() error {
	tls := libc.NewTLS()
	defer tls.Close()
	base := sqlite3.Xsqlite3_vfs_find(tls, 0)
	if base == 0 {
		return errors.New("SQLite has no default VFS")
	}
	v := sqlite3.Xsqlite3_malloc64(tls, uint64(unsafe.Sizeof(sqlite3.Tsqlite3_vfs{})))
	name := sqlite3.Xsqlite3_malloc64(tls, uint64(len(logVFS)+1))
	if v == 0 || name == 0 {
		return errors.New("registering the store's VFS: out of memory")
	}
	copy(unsafe.Slice((*byte)(cmem(name)), len(logVFS)+1), logVFS+"\x00")
	vfs := (*sqlite3.Tsqlite3_vfs)(cmem(v))
	*vfs = *(*sqlite3.Tsqlite3_vfs)(cmem(base))
	vfs.FpNext, vfs.FzName, vfs.FxOpen = 0, name, cFunc(logOpen)
	logs.base = base
	if rc := sqlite3.Xsqlite3_vfs_register(tls, v, 0); rc != sqlite3.SQLITE_OK {
		return errors.New("registering the store's VFS: " + libc.GoString(sqlite3.Xsqlite3_errstr(tls, rc)))
	}
	return nil
})

// logs is the state of logVFS: the default VFS it opens files with, the
// methods it gives the files it changes, and each open log's gathered
// writes. One lock guards it all, and every log's writes: SQLite calls a
// file from one connection at a time, but a barrier of one connection
// writes what every log has gathered.
var logs struct {
	sync.Mutex
	base    uintptr             // the default VFS
	methods map[uintptr]uintptr // the methods logVFS gave a file → the file's own
	logMeth map[uintptr]uintptr // a file's own methods → logVFS's for a log
	dbMeth  map[uintptr]uintptr // a file's own methods → logVFS's for the store's file
	open    map[uintptr]*logFile
}

// logFile is what a log has gathered: n bytes at buf, to be written at
// offset start of the file.
type logFile struct {
	buf, size uintptr // C memory, and its size
	n         int
	start     int64
	// commit: the last header written was a commit's, so the write of
	// its page writes all (kept when a barrier wrote the header alone)
	commit bool
}

// cFunc is f as a C function pointer of modernc's SQLite (the memory
// representation of https://golang.org/s/go11func, as the driver's own
// cFuncPointer): f must be a function declared at package level.
func cFunc[T any](f T) uintptr { return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f})) }

// cmem is the C memory at p (memory of modernc's C heap, which Go's
// collector neither moves nor frees: a uintptr is how SQLite's code holds
// it, and the conversion is valid for as long as SQLite keeps it).
func cmem(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// call is C function pointer fp as a Go function of type T.
func call[T any](fp uintptr) T { return *(*T)(unsafe.Pointer(&struct{ uintptr }{fp})) }

// logOpen is logVFS's xOpen: the default VFS's, then a log and the
// store's file get methods of logVFS (wrapping their own).
func logOpen(tls *libc.TLS, _ uintptr, name uintptr, file uintptr, flags int32, outFlags uintptr) int32 {
	base := (*sqlite3.Tsqlite3_vfs)(cmem(logs.base))
	rc := call[func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32](base.FxOpen)(tls, logs.base, name, file, flags, outFlags)
	own := (*sqlite3.Tsqlite3_file)(cmem(file)).FpMethods
	if rc != sqlite3.SQLITE_OK || own == 0 {
		return rc
	}
	isLog := flags&sqlite3.SQLITE_OPEN_WAL != 0
	if !isLog && flags&sqlite3.SQLITE_OPEN_MAIN_DB == 0 {
		return rc
	}
	logs.Lock()
	defer logs.Unlock()
	if logs.methods == nil {
		logs.methods, logs.logMeth, logs.dbMeth, logs.open = map[uintptr]uintptr{}, map[uintptr]uintptr{}, map[uintptr]uintptr{}, map[uintptr]*logFile{}
	}
	table := logs.dbMeth
	if isLog {
		table = logs.logMeth
	}
	m, ok := table[own]
	if !ok {
		m = sqlite3.Xsqlite3_malloc64(tls, uint64(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
		if m == 0 {
			return rc // SQLite's own methods, unchanged
		}
		wrapped := (*sqlite3.Tsqlite3_io_methods)(cmem(m))
		*wrapped = *(*sqlite3.Tsqlite3_io_methods)(cmem(own))
		if isLog {
			wrapped.FxClose, wrapped.FxRead, wrapped.FxWrite = cFunc(logClose), cFunc(logRead), cFunc(logWrite)
			wrapped.FxTruncate, wrapped.FxSync, wrapped.FxFileSize = cFunc(logTruncate), cFunc(logSyncFile), cFunc(logFileSize)
			wrapped.FxFileControl = cFunc(logFileControl)
		} else if wrapped.FiVersion >= 2 && wrapped.FxShmBarrier != 0 {
			wrapped.FxShmBarrier = cFunc(storeShmBarrier)
		}
		table[own], logs.methods[m] = m, own
	}
	(*sqlite3.Tsqlite3_file)(cmem(file)).FpMethods = m
	if isLog {
		logs.open[file] = &logFile{}
	}
	return rc
}

// own is the file's own methods (logs held).
func own(file uintptr) *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(cmem(logs.methods[(*sqlite3.Tsqlite3_file)(cmem(file)).FpMethods]))
}

// flush writes what log file has gathered (logs held).
func flush(tls *libc.TLS, file uintptr, l *logFile) int32 {
	if l == nil || l.n == 0 {
		return sqlite3.SQLITE_OK
	}
	n := l.n
	l.n = 0 // commit stays: a barrier may write a commit's header before its page
	write := call[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](own(file).FxWrite)
	for at := 0; at < n; at += logWrite1 {
		if rc := write(tls, file, l.buf+uintptr(at), int32(min(n-at, logWrite1)), l.start+int64(at)); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	return sqlite3.SQLITE_OK
}

func logWrite(tls *libc.TLS, file, p uintptr, amt int32, off int64) int32 {
	logs.Lock()
	defer logs.Unlock()
	l := logs.open[file]
	if l.n > 0 && off != l.start+int64(l.n) {
		if rc := flush(tls, file, l); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if need := uintptr(l.n) + uintptr(amt); need > l.size {
		size := max(need, 2*l.size, 64<<10)
		buf := sqlite3.Xsqlite3_realloc64(tls, l.buf, uint64(size))
		if buf == 0 {
			// no room to gather it: written at once, after what was
			if rc := flush(tls, file, l); rc != sqlite3.SQLITE_OK {
				return rc
			}
			return call[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](own(file).FxWrite)(tls, file, p, amt, off)
		}
		l.buf, l.size = buf, size
	}
	if l.n == 0 {
		l.start = off
	}
	src := unsafe.Slice((*byte)(cmem(p)), amt)
	copy(unsafe.Slice((*byte)(cmem(l.buf+uintptr(l.n))), amt), src)
	l.n += int(amt)
	switch {
	case amt == frameHeader:
		// a frame's header: a commit's says how large the database is
		// (bytes 4 to 8), every other frame's is 0 there
		l.commit = src[4]|src[5]|src[6]|src[7] != 0
	case l.commit:
		// the page of a commit's frame: the commit's writes go now
		l.commit = false
		return flush(tls, file, l)
	case l.n >= logGather:
		return flush(tls, file, l)
	}
	return sqlite3.SQLITE_OK
}

// logRead reads after writing what was gathered; the read itself runs
// without the lock (a cold read of a long conversation reads many pages
// of the log): nothing of this log is gathered while its own connection
// reads, so no barrier of another writes to it meanwhile.
func logRead(tls *libc.TLS, file, p uintptr, amt int32, off int64) int32 {
	logs.Lock()
	if rc := flush(tls, file, logs.open[file]); rc != sqlite3.SQLITE_OK {
		logs.Unlock()
		return rc
	}
	read := own(file).FxRead
	logs.Unlock()
	return call[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](read)(tls, file, p, amt, off)
}

func logTruncate(tls *libc.TLS, file uintptr, size int64) int32 {
	logs.Lock()
	defer logs.Unlock()
	if rc := flush(tls, file, logs.open[file]); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return call[func(*libc.TLS, uintptr, int64) int32](own(file).FxTruncate)(tls, file, size)
}

func logSyncFile(tls *libc.TLS, file uintptr, flags int32) int32 {
	logs.Lock()
	defer logs.Unlock()
	if rc := flush(tls, file, logs.open[file]); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return call[func(*libc.TLS, uintptr, int32) int32](own(file).FxSync)(tls, file, flags)
}

func logFileSize(tls *libc.TLS, file, size uintptr) int32 {
	logs.Lock()
	defer logs.Unlock()
	if rc := flush(tls, file, logs.open[file]); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return call[func(*libc.TLS, uintptr, uintptr) int32](own(file).FxFileSize)(tls, file, size)
}

func logFileControl(tls *libc.TLS, file uintptr, op int32, arg uintptr) int32 {
	logs.Lock()
	defer logs.Unlock()
	if rc := flush(tls, file, logs.open[file]); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return call[func(*libc.TLS, uintptr, int32, uintptr) int32](own(file).FxFileControl)(tls, file, op, arg)
}

func logClose(tls *libc.TLS, file uintptr) int32 {
	logs.Lock()
	defer logs.Unlock()
	l := logs.open[file]
	rc := flush(tls, file, l)
	closed := call[func(*libc.TLS, uintptr) int32](own(file).FxClose)(tls, file)
	if l != nil && l.buf != 0 {
		sqlite3.Xsqlite3_free(tls, l.buf)
	}
	delete(logs.open, file)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return closed
}

// storeShmBarrier is the store file's xShmBarrier: SQLite calls it before
// it makes a commit visible to readers, so every log's gathered writes go
// to their files first.
func storeShmBarrier(tls *libc.TLS, file uintptr) {
	logs.Lock()
	for f, l := range logs.open {
		// an error here cannot be returned: the commit's own page write
		// (logWrite) has written and reported it already
		flush(tls, f, l)
	}
	barrier := own(file).FxShmBarrier
	logs.Unlock()
	call[func(*libc.TLS, uintptr)](barrier)(tls, file)
}
