package sqlite

import (
	"errors"
	"strings"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// This file classifies the driver's errors by SQLite's result codes, not
// by their words: a code is SQLite's promise, a message is not.

// resultCode is SQLite's primary result code of err (the low byte of an
// extended code), or 0 when err did not come from SQLite.
func resultCode(err error) int {
	var e *driver.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

// isBusy reports whether err is SQLite's "database is locked": another
// connection holds the file (SQLITE_BUSY, or SQLITE_LOCKED within one
// process's shared cache).
func isBusy(err error) bool {
	c := resultCode(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// isForeignKey reports whether err is a foreign key constraint that
// failed: a row naming a conversation that is not there.
func isForeignKey(err error) bool {
	var e *driver.Error
	return errors.As(err, &e) && e.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// isDamaged reports whether err is SQLite finding the file not a database
// or its pages damaged (SQLITE_NOTADB, SQLITE_CORRUPT).
func isDamaged(err error) bool {
	c := resultCode(err)
	return c == sqlite3.SQLITE_NOTADB || c == sqlite3.SQLITE_CORRUPT
}

// cannotOpen reports whether err is SQLite unable to open or write the
// file or the -wal and -shm files beside it (SQLITE_CANTOPEN,
// SQLITE_READONLY, SQLITE_PERM).
func cannotOpen(err error) bool {
	c := resultCode(err)
	return c == sqlite3.SQLITE_CANTOPEN || c == sqlite3.SQLITE_READONLY || c == sqlite3.SQLITE_PERM
}

// noSuchTable reports whether err is a statement naming a table the file
// does not have: a store made before the table was (SQLite gives this the
// generic SQLITE_ERROR, so its words are all that tell it apart).
func noSuchTable(err error) bool {
	return resultCode(err) == sqlite3.SQLITE_ERROR && strings.Contains(err.Error(), "no such table")
}
