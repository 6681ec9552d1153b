package sqlite

// This file is how a synced write reaches the disk. The store's
// connection commits every transaction at synchronous=NORMAL: in WAL
// mode a commit is then written to the -wal file (pwrite) before it
// returns, so it survives a crash of the process, and SQLite syncs the
// log only around checkpoints. A write that must survive a power loss
// (every write but a lazy one, history.Lazy) then syncs the log itself
// (syncLog), once its transaction has committed: the log is written in
// order, so that sync puts every earlier commit on disk too — the
// round's lazy answer and keeps with its synced results, as SQLite's
// FULL level did. A synced write costs one fdatasync, as at FULL, and
// the connection never switches its level (two PRAGMAs a round before).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// logSync is what a store knows of the syncs of its log: which commits are
// on disk, and which log file's name is.
type logSync struct {
	// commits counts the store's committed transactions; it is raised
	// after each commit returns, so that a sync begun after reading n
	// covers the first n.
	commits atomic.Uint64

	mu     sync.Mutex
	synced uint64      // the commits known to be on disk: a sync covered them
	named  os.FileInfo // the log file whose directory entry was synced (nil: none yet)
	// syncFile syncs a file's data to disk (fdatasync where there is one);
	// tests count its calls.
	syncFile func(*os.File) error
}

// committed notes that a transaction of the store has committed.
func (l *logSync) committed() { l.commits.Add(1) }

// syncLog puts every transaction the store has committed so far on disk:
// it syncs the store's write-ahead log, and the log's directory the first
// time it meets that log file (a log made anew — by the first write after
// the last connection to the store closed — has its name on disk only
// then, as SQLite syncs a new log's directory at its first sync). Syncs
// of writes that committed at the same moment are shared: one whose
// commit a sync begun after it has covered returns at once.
//
// A log that is not there was checkpointed into the store's file and
// removed (the last connection to the store closed meanwhile, which
// syncs the file after its checkpoint); the store's file is synced all
// the same.
func (s *Store) syncLog() error {
	l := &s.logs
	want := l.commits.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.synced >= want {
		return nil
	}
	upTo := l.commits.Load() // every commit counted here has returned
	wal := s.path + "-wal"
	f, err := os.OpenFile(wal, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if f, err = os.OpenFile(s.path, os.O_RDWR, 0); err != nil {
			return fmt.Errorf("history store %s: syncing it to disk: %w", s.path, err)
		}
		wal = s.path
	} else if err != nil {
		return fmt.Errorf("history store %s: syncing its write-ahead log to disk: %w", s.path, err)
	}
	defer f.Close()
	if err := l.syncFile(f); err != nil {
		return fmt.Errorf("history store %s: syncing %s to disk: %w", s.path, wal, err)
	}
	if wal != s.path {
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("history store %s: syncing its write-ahead log to disk: %w", s.path, err)
		}
		if l.named == nil || !os.SameFile(l.named, fi) {
			if err := syncDir(filepath.Dir(s.path)); err != nil {
				return fmt.Errorf("history store %s: syncing the directory of its write-ahead log to disk: %w", s.path, err)
			}
			l.named = fi
		}
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
