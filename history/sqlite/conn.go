package sqlite

// This file is the store's connections (the writer and the readers,
// sqlite.go): the driver's, each with the round's statements (rawStmts)
// prepared on it kept beside it and freed as it closes.

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"sync"
)

// ownConn is a connection of the SQLite driver with the statements the
// store prepared on it (rawPrepared), which it frees before it closes the
// driver's: SQLite keeps a connection whose statements are not finalized
// open — its file descriptors too — and the driver can no longer
// finalize them once it has closed the connection. database/sql closes a
// connection by itself when it finds it bad (the driver's IsValid is
// false after a statement was interrupted by its context's end), so the
// store cannot free them beforehand. It must not be used outside the
// connection database/sql holds for it (sql.Conn.Raw).
type ownConn struct {
	sqldriver.Conn                                // the driver's
	stmts          *rawStmts                      // prepared on its first use; nil before
	closed         func(close func() error) error // closes it around the driver's close (nil: just close)
}

// Close frees the store's statements, then closes the driver's
// connection (through closed, when set).
func (c *ownConn) Close() error {
	if c.stmts != nil {
		c.stmts.close()
		c.stmts = nil
	}
	if c.closed != nil {
		return c.closed(c.Conn.Close)
	}
	return c.Conn.Close()
}

// The driver's optional interfaces, passed on: database/sql looks for
// each with a type assertion, and without them would take slower paths
// or lose a check (IsValid, ResetSession). The driver has them all
// (TestTheStoresConnectionHasTheDriversInterfaces).

func (c *ownConn) PrepareContext(ctx context.Context, query string) (sqldriver.Stmt, error) {
	return c.Conn.(sqldriver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *ownConn) BeginTx(ctx context.Context, opts sqldriver.TxOptions) (sqldriver.Tx, error) {
	return c.Conn.(sqldriver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *ownConn) ExecContext(ctx context.Context, query string, args []sqldriver.NamedValue) (sqldriver.Result, error) {
	return c.Conn.(sqldriver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *ownConn) QueryContext(ctx context.Context, query string, args []sqldriver.NamedValue) (sqldriver.Rows, error) {
	return c.Conn.(sqldriver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *ownConn) Ping(ctx context.Context) error {
	return c.Conn.(sqldriver.Pinger).Ping(ctx)
}

func (c *ownConn) ResetSession(ctx context.Context) error {
	return c.Conn.(sqldriver.SessionResetter).ResetSession(ctx)
}

func (c *ownConn) IsValid() bool {
	return c.Conn.(sqldriver.Validator).IsValid()
}

// driverInterfaces are the driver's connection's interfaces ownConn
// passes on.
var driverInterfaces = []func(sqldriver.Conn) bool{
	func(c sqldriver.Conn) bool { _, ok := c.(sqldriver.ConnPrepareContext); return ok },
	func(c sqldriver.Conn) bool { _, ok := c.(sqldriver.ConnBeginTx); return ok },
	func(c sqldriver.Conn) bool { _, ok := c.(sqldriver.ExecerContext); return ok },
	func(c sqldriver.Conn) bool { _, ok := c.(sqldriver.QueryerContext); return ok },
	func(c sqldriver.Conn) bool { _, ok := c.(sqldriver.Pinger); return ok },
	func(c sqldriver.Conn) bool { _, ok := c.(sqldriver.SessionResetter); return ok },
	func(c sqldriver.Conn) bool { _, ok := c.(sqldriver.Validator); return ok },
}

// ownConnector opens the store's connections: the SQLite driver's
// (registered as "sqlite"), each in an ownConn.
type ownConnector struct {
	dsn    string
	opened func()                         // told of each connection opened (nil: nobody)
	closed func(close func() error) error // closes each connection around the driver's close (nil: just close)
}

// sqliteDriver is the driver registered as "sqlite", with whatever was
// registered on it.
var sqliteDriver = sync.OnceValue(func() sqldriver.Driver {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		return nil
	}
	defer db.Close()
	return db.Driver()
})

// Connect opens a connection of the driver and checks that it has every
// interface ownConn passes on.
func (o ownConnector) Connect(context.Context) (sqldriver.Conn, error) {
	drv := o.Driver()
	if drv == nil {
		return nil, errors.New("the SQLite driver is not registered as \"sqlite\"")
	}
	dc, err := drv.Open(o.dsn)
	if err != nil {
		return nil, err
	}
	for _, has := range driverInterfaces {
		if !has(dc) {
			dc.Close()
			return nil, errors.New("the SQLite driver's connection lacks an interface the store passes on")
		}
	}
	if o.opened != nil {
		o.opened()
	}
	return &ownConn{Conn: dc, closed: o.closed}, nil
}

// Driver is the driver registered as "sqlite".
func (o ownConnector) Driver() sqldriver.Driver { return sqliteDriver() }

// openDB opens the database dsn names with the store's connections,
// each counted by logs as it opens and closed through it (closeConn);
// logs is read when a connection opens or closes, so it may be set
// after openDB returns, before the first connection opens.
func openDB(dsn string, logs **logSync) *sql.DB {
	return sql.OpenDB(ownConnector{dsn: dsn,
		opened: func() { (*logs).opened() },
		closed: func(close func() error) error { return (*logs).closeConn(close) },
	})
}
