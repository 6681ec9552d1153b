package sqlite

// This file is the store's readers: the connections its read
// transactions run on, beside its one writer (readconn, issue 34).

import (
	"context"
	"database/sql"
)

// readers is how many reader connections a store opens at most: two
// long reads run side by side, and a third waits for one of them.
const readers = 2

// openReaders opens the store's readers (s.rdb), once the file is known
// to be a store, upgraded and in WAL mode, and one reader connection at
// once, while the files are the ones OpenWith checked (NoFollow), kept
// idle for the first read. No _txlock: a read transaction begins
// deferred (BEGIN), and in WAL mode it takes no lock a writer waits on;
// its first statement takes its snapshot, which holds every commit that
// returned before it. query_only: nothing is written through them. A
// reader that closes goes through logs.closeConn as the writer does: the
// last connection to close checkpoints and removes the log (Close closes
// the readers first, so that is the writer). On an error the readers are
// closed.
func (s *Store) openReaders(logs *logSync) error {
	s.rdb = openDB(sqliteURI(s.path, "mode=rw&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_pragma=query_only(1)"), func(close func() error) error { return logs.closeConn(close) })
	s.rdb.SetMaxOpenConns(readers)
	s.rdb.SetMaxIdleConns(readers)
	c, err := s.rdb.Conn(context.Background())
	if err == nil {
		err = c.PingContext(context.Background())
		c.Close()
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
