package sqlite

// This file is how a write commits and how a synced one reaches the disk
// (write, syncLog). The store's connection commits every transaction at
// synchronous=NORMAL: in WAL mode a commit is then written to the -wal
// file (pwrite) before it returns, so it survives a crash of the process,
// and SQLite syncs the log only around checkpoints. A write that must
// survive a power loss (every write but a lazy one, history.Lazy) then
// syncs the log itself (syncLog), once its transaction has committed: the
// log is written in order, so that sync puts every earlier commit on disk
// too — the round's lazy answer and keeps with its synced results, as
// SQLite's FULL level did. A synced write costs one fdatasync, as at FULL,
// and the connection never switches its level (two PRAGMAs a round
// before issue 34).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// logSync is what a store knows of the syncs of its log: which commits are
// on disk, and the log file it syncs.
type logSync struct {
	// commits counts the store's committed transactions; it is raised
	// after each commit returns, so that a sync begun after reading n
	// covers the first n.
	commits atomic.Uint64

	mu     sync.Mutex
	synced uint64 // the commits known to be on disk: a sync covered them
	// the log file, kept open between syncs while it is the one at the
	// log's name (a log made anew — after the last connection to the
	// store closed — is opened anew), its descriptor and what it is
	log *os.File
	fd  uintptr
	id  fileID
	// conns is how many connections to the store are open now (the
	// writer and the readers): SQLite checkpoints and removes the log
	// only when the last of them closes, so only then is the log kept
	// here let go (closeConn). A reader that database/sql closes while
	// the writer is open leaves the log where it is, and the next sync
	// must still find it there.
	conns int
	// syncFile syncs a file's data to disk (fdatasync where there is one:
	// syncData); tests count its calls.
	syncFile func(f *os.File, fd uintptr) error
	// failed is the first sync of the log that failed: the kernel may
	// have dropped the pages it did not write, and reports that once, so
	// a later sync that succeeds proves nothing of them — and the log's
	// frames chain, so recovery stops at the first one lost. Every later
	// synced write fails with it until the store is opened again.
	failed error
}

// committed notes that a transaction of the store has committed.
func (l *logSync) committed() { l.commits.Add(1) }

// close closes the log file kept open, once no connection to the store
// is open (one still in a read when the store closed lets it go as it
// closes).
func (l *logSync) close() { _ = l.closeConn(nil) }

// opened counts a connection to the store that has opened (conns).
func (l *logSync) opened() {
	l.mu.Lock()
	l.conns++
	l.mu.Unlock()
}

// closeConn closes a connection of the store's (close, unless nil) with
// l.mu held, then, when it was the last one open, the log file kept
// open, so that no sync looks at the log between SQLite's unlinking it
// and the kept one being let go.
func (l *logSync) closeConn(close func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if close != nil {
		err = close()
		l.conns--
	}
	if l.conns <= 0 && l.log != nil {
		l.log.Close()
		l.log, l.id = nil, fileID{}
	}
	return err
}

// syncLog puts every transaction the store has committed so far on disk:
// it syncs the store's write-ahead log, and the log's directory the first
// time it meets that log file (a log made anew has its name on disk only
// then, as SQLite syncs a new log's directory at its first sync). Syncs
// of writes that committed at the same moment are shared: one whose
// commit a sync begun after it has covered returns at once. A sync costs
// a look at the log's name (is it still the file kept open? fileAt) and the
// fdatasync.
//
// A log that is not there was checkpointed into the store's file and
// removed when the last connection to the store closed (SQLite syncs the
// log and the file around that checkpoint; the last connection of the
// store's to close let go of the log kept here: logSync.closeConn). One that is
// not there, or is another file, while the store's connection that
// wrote the log kept here is still open was removed or replaced from
// under SQLite, by something else: SQLite writes on to the file it has
// open, which has no name any more, and what it holds is lost with a
// crash. No sync can keep it, so the sync fails (and every later one of
// this store handle, as after a failed sync), rather than say that
// commits are on disk that a crash would lose. The log is the one file
// of the store this opens and closes: SQLite locks the store's file and
// its -shm with POSIX locks, which closing any descriptor of them would
// drop, and never the log.
func (s *Store) syncLog() error {
	l := &s.logs
	want := l.commits.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return fmt.Errorf("history store %s: an earlier sync of its write-ahead log failed, so no later write can be known to be on disk (open the store again): %w", s.path, l.failed)
	}
	if l.synced >= want {
		return nil
	}
	upTo := l.commits.Load() // every commit counted here has returned
	wal := s.path + "-wal"
	id, err := fileAt(wal)
	switch {
	case l.log != nil && (errors.Is(err, fs.ErrNotExist) || err == nil && !id.same(l.id)):
		// removed or replaced from under the connection writing it
		what := "removed"
		if err == nil {
			what = "replaced by another file"
		}
		l.failed = fmt.Errorf("its write-ahead log %s was %s while the store had it open: the commits SQLite writes to the file it has open are lost with a crash", wal, what)
		return fmt.Errorf("history store %s: %w (open the store again)", s.path, l.failed)
	case errors.Is(err, fs.ErrNotExist):
		// checkpointed into the store's file, synced, and removed when
		// the last connection closed: nothing is left to sync. (The
		// store's file is not opened here: closing a descriptor of it
		// would drop the locks SQLite holds on it.)
		l.synced = upTo
		return nil
	case err != nil:
		return fmt.Errorf("history store %s: syncing its write-ahead log to disk: %w", s.path, err)
	}
	if l.log == nil || !id.same(l.id) {
		if l.log != nil {
			l.log.Close()
			l.log, l.id = nil, fileID{}
		}
		f, err := os.OpenFile(wal, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("history store %s: syncing its write-ahead log to disk: %w", s.path, err)
		}
		// what was opened, which may be newer than what was looked at
		if id, err = fileOf(f); err != nil {
			f.Close()
			return fmt.Errorf("history store %s: syncing its write-ahead log to disk: %w", s.path, err)
		}
		// a log new to this store: its name on disk, before it is counted on
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			f.Close()
			return fmt.Errorf("history store %s: syncing the directory of its write-ahead log to disk: %w", s.path, err)
		}
		l.log, l.fd, l.id = f, f.Fd(), id
	}
	if err := l.syncFile(l.log, l.fd); err != nil {
		l.failed = err
		return fmt.Errorf("history store %s: syncing %s to disk: %w", s.path, wal, err)
	}
	l.synced = upTo
	return nil
}

// syncDir syncs a directory's entries to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// unsyncedError is the error of a write that committed but whose sync to
// disk failed: what it wrote is in the store (a crash of the process keeps
// it), and may be lost with the machine.
type unsyncedError struct{ err error }

func (e *unsyncedError) Error() string {
	return fmt.Sprintf("committed, but not on disk: %v", e.err)
}

func (e *unsyncedError) Unwrap() error { return e.err }

// write runs fn in one transaction, which takes the write lock as it
// begins (_txlock=immediate), on the store's one connection, and commits
// it at synchronous=NORMAL: in the log, safe from a crash of the process.
// Unless the write is lazy (or the store relaxed), it then syncs the log
// (syncLog), so that when it returns nil the write — and every commit
// before it — is on disk. A sync that fails is an *unsyncedError: the
// write is committed all the same.
func (s *Store) write(ctx context.Context, doing string, lazy bool, fn func(tx *sql.Tx) error) error {
	return s.writeAnd(ctx, doing, lazy, fn, nil)
}

// writeAnd is write, and once fn's transaction has committed it runs
// committed (when not nil) — while the sync waits for the disk, on
// another goroutine, when there is one — and returns after both.
func (s *Store) writeAnd(ctx context.Context, doing string, lazy bool, fn func(tx *sql.Tx) error, committed func()) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.explain(doing, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.explain("committing: "+doing, err)
	}
	return s.afterCommit(doing, lazy, committed)
}

// afterCommit is what follows a write's commit (writeAnd, rawWriteAnd):
// the commit counted, then, unless the write is lazy (or the store
// relaxed), the log synced — while committed (when not nil) runs on
// another goroutine — and an *unsyncedError if the sync fails.
func (s *Store) afterCommit(doing string, lazy bool, committed func()) error {
	s.logs.committed()
	if lazy || s.relaxed {
		if committed != nil {
			committed()
		}
		return nil
	}
	var done chan struct{}
	if committed != nil {
		done = make(chan struct{})
		go func() {
			defer close(done)
			committed()
		}()
	}
	err := s.syncLog()
	if done != nil {
		<-done
	}
	if err != nil {
		s.forgetOwn()
		return fmt.Errorf("%s: %w", doing, &unsyncedError{err})
	}
	return nil
}
