package postgres

import (
	"context"

	"github.com/myelin-run/myelin/history"
)

// ExecSQL runs query on a Postgres store's tables, as something other than
// myelin would (the suite's damaged-record cases).
func ExecSQL(s history.Store, query string) error {
	_, err := s.(*Store).pool.Exec(context.Background(), query)
	return err
}

// PauseInWrite makes every write of conversation id (in any schema) call
// pause once it holds the conversation's row lock, until the test ends. A
// test using it must not run in parallel with others.
func PauseInWrite(t interface{ Cleanup(func()) }, id string, pause func()) {
	pausedInWrite = func(c string) {
		if c == id {
			pause()
		}
	}
	t.Cleanup(func() { pausedInWrite = nil })
}

// Setting is a server setting as a Postgres store's sessions have it.
func Setting(s history.Store, name string) (string, error) {
	var v string
	err := s.(*Store).pool.QueryRow(context.Background(), `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// MessageRows is how many message rows a Postgres store's tables hold,
// and their bytes.
func MessageRows(s history.Store) (rows, bytes int64, err error) {
	err = s.(*Store).pool.QueryRow(context.Background(), `SELECT count(*), COALESCE(sum(length(message)), 0) FROM messages`).Scan(&rows, &bytes)
	return rows, bytes, err
}

// OnCallersClock is r timed by the callers' times (Spend's now, an
// answer's At) instead of the database's clock, so that the shared
// contract's checks (ratelimittest.RunShared) can move time without
// waiting.
func OnCallersClock(r RateLimits) RateLimits {
	r.callers = true
	return r
}

// SentCacheHit reports whether a Postgres store would take conversation
// id's newest stored request body from what it remembers (its sent
// cache) for its next AddRequest, rather than read it back.
func SentCacheHit(s history.Store, id string) (bool, error) {
	st := s.(*Store)
	var n int
	var meta string
	if err := st.pool.QueryRow(context.Background(), `SELECT n, meta FROM requests WHERE conversation = $1 ORDER BY n DESC LIMIT 1`, id).Scan(&n, &meta); err != nil {
		return false, err
	}
	_, ok := st.sent.Last(id, n, meta)
	return ok, nil
}
