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
