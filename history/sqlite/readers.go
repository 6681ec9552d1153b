package sqlite

// This file is the store's readers: the connections its read
// transactions run on, beside its one writer (readconn, issue 34).

import (
	"context"
	"database/sql"
)

// readers is how many reader connections a store opens: two long reads
// run side by side, and a third waits for one of them.
const readers = 2

// openReaders opens the store's readers (s.rdb), once the file is known
// to be a store, upgraded and in WAL mode: every one of them at once,
// while the files are the ones OpenWith checked (NoFollow), kept idle
// for the reads. (database/sql opens one again by the path only after it
// found one bad, as it does the writer: NoFollow checks at open.) No
// _txlock: a read transaction begins deferred (BEGIN), and in WAL mode it
// takes no lock a writer waits on; its first statement takes its
// snapshot, which holds every commit that returned before it.
// query_only: nothing is written through them. A reader is counted and
// closed through s.logs as the writer is: whichever connection closes
// last checkpoints and removes the log, and only then is the log kept
// for the syncs let go (logSync.closeConn). On an error the readers are
// closed.
func (s *Store) openReaders() error {
	logs := &s.logs
	s.rdb = openDB(sqliteURI(s.path, "mode=rw&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_pragma=query_only(1)"), &logs)
	s.rdb.SetMaxOpenConns(readers)
	s.rdb.SetMaxIdleConns(readers)
	var conns []*sql.Conn
	var err error
	for range readers {
		var c *sql.Conn
		if c, err = s.rdb.Conn(context.Background()); err != nil {
			break
		}
		conns = append(conns, c)
		if err = c.PingContext(context.Background()); err != nil {
			break
		}
	}
	for _, c := range conns {
		c.Close() // back to the pool, idle
	}
	if err != nil {
		s.rdb.Close()
		return s.explain("opening a reader", err)
	}
	return nil
}

// readDB is where a read of many statements runs its transaction: the
// store's readers (rdb), beside the writer.
func (s *Store) readDB() *sql.DB { return s.rdb }
