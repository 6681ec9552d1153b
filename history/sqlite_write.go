package history

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
)

// writer is the SQLite store's connection for writes, held by the store
// from its first write to Close, with the statements of every write
// prepared on it once: the transaction's own (BEGIN IMMEDIATE, COMMIT,
// ROLLBACK) and the round's. A PRAGMA is not among them: SQLite sets it
// when the statement is prepared, not when it runs again.
//
// A transaction is those statements run in turn on the held connection,
// not a database/sql Tx: a Tx starts a goroutine to watch its context, and
// another for every query run in it, and the driver prepares its BEGIN and
// COMMIT afresh for each — together about a third of a light round's CPU
// beyond the least SQLite work it needs (BenchmarkAgentRound).
type writer struct {
	conn *sql.Conn

	begin, commit, rollback *sql.Stmt
	// an append's one read: where the conversation ends, and its claim
	nextSeq                                          *sql.Stmt
	insert, touch, selectClaim, insertKept, dropKept *sql.Stmt
	all                                              []*sql.Stmt // to close
}

// writeTx is what a write's function runs its statements with, inside the
// write's transaction: any statement through the held connection (the
// methods of sql.Conn), the prepared ones through st.
type writeTx struct {
	*sql.Conn
	st *writer
}

// queryer is what a reader of a few rows needs: a read-only transaction
// (sql.Tx) or a write's (writeTx).
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// writerLocked returns the writer connection, making it and preparing its
// statements when there is none. s.wmu must be held.
func (s *SQLite) writerLocked(ctx context.Context) (*writer, error) {
	if s.w != nil {
		return s.w, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: conn}
	for _, st := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&w.begin, `BEGIN IMMEDIATE`}, // the write lock from the start, so that the busy timeout applies
		{&w.commit, `COMMIT`},
		{&w.rollback, `ROLLBACK`},
		{&w.nextSeq, `SELECT (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation = c.id), c.messages,
			cl.token, cl.pid, cl.host, cl.node, cl.since, cl.expires
			FROM conversations c LEFT JOIN claims cl ON cl.conversation = c.id WHERE c.id = ?`},
		{&w.insert, `INSERT INTO messages (conversation, seq, message, crc) VALUES (?, ?, ?, ?)`},
		{&w.touch, `UPDATE conversations SET updated = ?, messages = messages + ? WHERE id = ?`},
		{&w.selectClaim, `SELECT token, pid, host, node, since, expires FROM claims WHERE conversation = ?`},
		{&w.insertKept, `INSERT OR REPLACE INTO kept (conversation, call_id, part) VALUES (?, ?, ?)`},
		{&w.dropKept, `DELETE FROM kept WHERE conversation = ?`},
	} {
		if *st.stmt, err = conn.PrepareContext(ctx, st.sql); err != nil {
			w.close()
			return nil, err
		}
		w.all = append(w.all, *st.stmt)
	}
	s.w, s.normal = w, false // a new connection is at the DSN's level
	return w, nil
}

// close closes the writer's statements and gives its connection back.
func (w *writer) close() {
	for _, st := range w.all {
		st.Close()
	}
	w.conn.Close()
}

// dropWriter closes the writer connection, if any; the next write makes
// another. s.wmu must be held.
func (s *SQLite) dropWriter() {
	if s.w != nil {
		s.w.close()
		s.w = nil
	}
}

// write runs fn in one transaction on the writer connection, which takes
// the write lock as it begins (BEGIN IMMEDIATE), one write at a time — so
// that the synchronous level set for it covers that transaction alone,
// never another goroutine's.
//
// A lazy write commits at synchronous=NORMAL, any other at FULL. The level
// is a setting of the connection, not of a transaction, and is changed
// only when the next write needs the other one: a round's lazy writes (the
// answer, the keeps) share one switch to NORMAL, and its synced append one
// switch back, instead of two pragmas around every lazy write.
//
// When fn fails, or the commit does, the transaction is rolled back; when
// the rollback fails too, the connection is given up (closing it rolls
// back), so that no write ever begins inside another's transaction.
func (s *SQLite) write(ctx context.Context, doing string, lazy bool, fn func(tx *writeTx) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	w, err := s.writerLocked(ctx)
	if err != nil {
		return s.explain(doing, err)
	}
	if !s.relaxed && lazy != s.normal {
		level := `PRAGMA synchronous = FULL`
		if lazy {
			level = `PRAGMA synchronous = NORMAL`
		}
		// Marked NORMAL before the pragma runs and FULL only after it did:
		// a failed or cancelled switch leaves the mark on the side that
		// syncs again.
		if lazy {
			s.normal = true
		}
		if _, err := w.conn.ExecContext(context.WithoutCancel(ctx), level); err != nil {
			return s.writerFailed(doing, err)
		}
		if !lazy {
			s.normal = false
		}
	}
	if _, err := w.begin.ExecContext(ctx); err != nil {
		return s.writerFailed(doing, err)
	}
	committed := false
	defer func() {
		if !committed {
			s.rollbackLocked(w)
		}
	}()
	if err := fn(&writeTx{Conn: w.conn, st: w}); err != nil {
		return err
	}
	// Not cancelled half way: in WAL mode the commit waits for no lock
	// (BEGIN IMMEDIATE took it), only for the disk.
	if _, err := w.commit.ExecContext(context.WithoutCancel(ctx)); err != nil {
		return s.writerFailed("committing: "+doing, err)
	}
	committed = true
	return nil
}

// rollbackLocked rolls back the writer's transaction. SQLite may have
// rolled it back already (an interrupted statement, a failed commit):
// that is no failure. Any other failure gives the connection up.
func (s *SQLite) rollbackLocked(w *writer) {
	_, err := w.rollback.ExecContext(context.Background())
	if err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		s.dropWriter()
	}
}

// writerFailed is the error of a statement of the writer's own that
// failed; when the connection itself is gone, it is given up, and the next
// write makes another. s.wmu must be held.
func (s *SQLite) writerFailed(doing string, err error) error {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		s.dropWriter()
	}
	return s.explain(doing, err)
}
