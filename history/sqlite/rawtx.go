package sqlite

// This file is how the round's writes — Append and Keep, two or three
// transactions of every tool round — run: on the store's one connection,
// taken from database/sql for the transaction (sql.Conn.Raw), with every
// statement they run prepared once on it, BEGIN IMMEDIATE and COMMIT
// included. Through database/sql's transactions the driver prepared and
// finalized its BEGIN and COMMIT for each transaction, and each statement
// went through database/sql's locks and conversions: in a scratch
// benchmark side by side, a one-row commit took ~55 µs of CPU that way
// and ~38 µs this way; BenchmarkDurableRound's store-cpu-µs/round has the
// round's (issue 34). What a transaction does is the same: the write lock taken as
// it begins (under the busy timeout), rolled back unless it commits, then
// write's commit count and sync (afterCommit).

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// rawStmts are the round's statements and a conversation's read,
// prepared on one of the store's connections (ownConn, which frees them
// as it closes; database/sql may replace a connection it found bad, and
// they are prepared again on the new one). They are used only inside
// sql.Conn.Raw, which holds the connection.
type rawStmts struct {
	begin, commit, rollback                                   sqldriver.Stmt
	nextSeq, insert, touch, dropKept, selectClaim, insertKept sqldriver.Stmt
	readTagged                                                sqldriver.Stmt // a conversation's read (readRows)
	wholeRecord                                               sqldriver.Stmt // a read whole's record (messagesOnce)
	// Marked's read (a transaction begun by beginRead, ended by
	// rollback) and SetMark's writes (mark.go)
	beginRead, markedRecord, rowCRC, setMark, dropMark sqldriver.Stmt

	// args and row are exec's and queryRow's arguments and row, made
	// once: a statement of the connection's is run by one caller at a
	// time (in sql.Conn.Raw), and the driver keeps neither past the call
	// that it is given them in.
	args []sqldriver.NamedValue
	row  []sqldriver.Value
}

// rawTx is a transaction of the round on the driver's connection.
type rawTx struct {
	ctx context.Context
	st  *rawStmts
}

// rawWriteAnd is writeAnd for a transaction run by fn on the driver's
// connection (rawTx).
func (s *Store) rawWriteAnd(ctx context.Context, doing string, lazy bool, fn func(tx rawTx) error, committed func()) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return s.explain(doing, err)
	}
	var fnErr, commitErr error
	err = c.Raw(func(dc any) error {
		st, err := s.rawPrepared(ctx, dc)
		if err != nil {
			return err
		}
		tx := rawTx{ctx: ctx, st: st}
		// COMMIT and ROLLBACK run whatever becomes of ctx: the driver
		// runs no statement once its context has ended, and a transaction
		// left open would hold the write lock, and the connection read
		// its own uncommitted writes, until the process ends. A COMMIT
		// run is reported as it went, not as the caller's cancel.
		end := rawTx{ctx: context.WithoutCancel(ctx), st: st}
		if err := tx.exec(st.begin); err != nil {
			// the driver may report a BEGIN that ran as failed when ctx
			// ended meanwhile: roll back whatever it began
			return errors.Join(err, end.rollBack())
		}
		if fnErr = fn(tx); fnErr != nil {
			return end.rollBack()
		}
		if commitErr = end.exec(st.commit); commitErr != nil {
			// a COMMIT that failed may leave the transaction open:
			// the connection goes back to database/sql without one
			return end.rollBack()
		}
		return nil
	})
	c.Close()
	if fnErr != nil {
		return fnErr
	}
	if commitErr != nil {
		return s.explain("committing: "+doing, commitErr)
	}
	if err != nil {
		return s.explain(doing, err)
	}
	return s.afterCommit(doing, lazy, committed)
}

// rawPrepared is the round's statements on the store's connection dc (an
// ownConn: the writer, or a reader, which being query_only runs only the
// reads of them), prepared on the first use of dc.
func (s *Store) rawPrepared(ctx context.Context, dc any) (*rawStmts, error) {
	c, ok := dc.(*ownConn)
	if !ok {
		return nil, fmt.Errorf("history store %s: a connection of %T, not of the store's own", s.path, dc)
	}
	if c.stmts != nil {
		return c.stmts, nil
	}
	st := &rawStmts{}
	for _, q := range []struct {
		stmt *sqldriver.Stmt
		sql  string
	}{
		{&st.begin, `BEGIN IMMEDIATE`},
		{&st.commit, `COMMIT`},
		{&st.rollback, `ROLLBACK`},
		{&st.nextSeq, nextSeqSQL},
		{&st.insert, insertSQL},
		{&st.touch, touchSQL},
		{&st.dropKept, dropKeptSQL},
		{&st.selectClaim, selectClaimSQL},
		{&st.insertKept, insertKeptSQL},
		{&st.readTagged, selectNewTagged},
		{&st.wholeRecord, wholeRecordSQL},
		{&st.beginRead, `BEGIN`},
		{&st.markedRecord, markedRecordSQL},
		{&st.rowCRC, rowCRCSQL},
		{&st.setMark, setMarkSQL},
		{&st.dropMark, dropMarkSQL},
	} {
		prepared, err := c.PrepareContext(ctx, q.sql)
		if err != nil {
			// the driver's nil *stmt is not kept: in the interface it
			// is not nil, and close would call its Close
			st.close()
			return nil, err
		}
		*q.stmt = prepared
	}
	c.stmts = st
	return st, nil
}

// close frees the statements.
func (st *rawStmts) close() {
	for _, stmt := range []sqldriver.Stmt{st.begin, st.commit, st.rollback, st.nextSeq, st.insert, st.touch, st.dropKept, st.selectClaim, st.insertKept, st.readTagged, st.wholeRecord, st.beginRead, st.markedRecord, st.rowCRC, st.setMark, st.dropMark} {
		if stmt != nil {
			stmt.Close()
		}
	}
	*st = rawStmts{}
}

// named is args as the driver takes them (database/sql's default
// conversion: an int as an int64, a json.RawMessage as its bytes).
func named(args []any) ([]sqldriver.NamedValue, error) {
	return appendNamed(make([]sqldriver.NamedValue, 0, len(args)), args)
}

// appendNamed is dst with args appended as named does.
func appendNamed(dst []sqldriver.NamedValue, args []any) ([]sqldriver.NamedValue, error) {
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		dst = append(dst, sqldriver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return dst, nil
}

// driverValue is a as database/sql's default conversion makes it, without
// its reflection for the types the store's statements take.
func driverValue(a any) (sqldriver.Value, error) {
	switch v := a.(type) {
	case nil, int64, string, []byte:
		return a, nil // the caller's own interface: unwrapped and wrapped again, each would allocate
	case int:
		return int64(v), nil
	case json.RawMessage:
		return []byte(v), nil
	}
	return sqldriver.DefaultParameterConverter.ConvertValue(a)
}

// bind is args as the driver takes them, in st's buffer (rawStmts.args).
func (st *rawStmts) bind(args []any) ([]sqldriver.NamedValue, error) {
	vals, err := appendNamed(st.args[:0], args)
	if err == nil {
		st.args = vals
	}
	return vals, err
}

// rollBack ends tx's transaction, if one is open, with ROLLBACK: a
// read's end, or a write's that did not commit. A ROLLBACK that failed
// (but for having found no transaction open: SQLite rolls back by itself
// after some errors) may leave the transaction open — a writer's holding
// the store's write lock from every other process, a reader's its
// snapshot, stale for every later read on it and keeping the log from
// being started over — until the connection is next used, which may be
// minutes later (a chat waiting for its user). Its error therefore wraps
// driver.ErrBadConn: returned from sql.Conn.Raw, database/sql then closes
// the connection, and SQLite rolls back what it had open as it closes
// (TestAConnectionWhoseRollbackFailedIsClosed).
func (tx rawTx) rollBack() error {
	err := tx.exec(tx.st.rollback)
	if rollbackFailed != nil {
		err = rollbackFailed(err)
	}
	if err == nil || strings.Contains(err.Error(), "no transaction is active") {
		return nil
	}
	return fmt.Errorf("rolling back: %w (the connection is closed: %w)", err, sqldriver.ErrBadConn)
}

// rollbackFailed, when not nil (tests only), is given the error of every
// ROLLBACK rollBack runs and returns the one it reports.
var rollbackFailed func(error) error

// exec runs st with args.
func (tx rawTx) exec(st sqldriver.Stmt, args ...any) error {
	vals, err := tx.st.bind(args)
	if err != nil {
		return err
	}
	defer clear(vals) // holds no argument (a message's bytes) past the call
	_, err = st.(sqldriver.StmtExecContext).ExecContext(tx.ctx, vals)
	return err
}

// queryRow runs st with args and scans its first row into dest (each an
// *int, *int64, *string, *[]byte, *sql.NullString or *sql.NullInt64);
// sql.ErrNoRows when it has none.
func (tx rawTx) queryRow(st sqldriver.Stmt, args []any, dest ...any) error {
	vals, err := tx.st.bind(args)
	if err != nil {
		return err
	}
	defer clear(vals)
	rows, err := st.(sqldriver.StmtQueryContext).QueryContext(tx.ctx, vals)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := len(rows.Columns())
	if cap(tx.st.row) < n {
		tx.st.row = make([]sqldriver.Value, n)
	}
	row := tx.st.row[:n]
	defer clear(row) // holds no value of this row past it
	if err := rows.Next(row); err != nil {
		if errors.Is(err, io.EOF) {
			return sql.ErrNoRows
		}
		return err
	}
	if len(row) != len(dest) {
		return fmt.Errorf("a row of %d columns scanned into %d values", len(row), len(dest))
	}
	for i, v := range row {
		if err := assign(dest[i], v); err != nil {
			return fmt.Errorf("column %d: %w", i+1, err)
		}
	}
	return nil
}

// assign stores the driver's value v in dest.
func assign(dest any, v sqldriver.Value) error {
	switch d := dest.(type) {
	case *sql.NullString:
		d.String, d.Valid = "", v != nil
		if v != nil {
			s, err := asString(v)
			d.String = s
			return err
		}
	case *sql.NullInt64:
		d.Int64, d.Valid = 0, v != nil
		if v != nil {
			n, ok := v.(int64)
			if !ok {
				return fmt.Errorf("%T is not an integer", v)
			}
			d.Int64 = n
		}
	case *string:
		s, err := asString(v)
		*d = s
		return err
	case *[]byte:
		switch b := v.(type) {
		case nil:
			*d = nil
		case []byte:
			*d = b // the driver's own copy (readRows)
		case string:
			*d = []byte(b)
		default:
			return fmt.Errorf("%T is not bytes", v)
		}
	case *int64:
		n, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%T is not an integer", v)
		}
		*d = n
	case *int:
		n, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%T is not an integer", v)
		}
		*d = int(n)
	default:
		return fmt.Errorf("cannot scan into %T", dest)
	}
	return nil
}

func asString(v sqldriver.Value) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case []byte:
		return string(s), nil
	}
	return "", fmt.Errorf("%T is not text", v)
}
