package history

import "time"

// SetClock makes a Memory or SQLite store time its claims by now, for the
// conformance suite (package history_test), which moves time without
// sleeping.
func SetClock(s Store, now func() time.Time) {
	switch s := s.(type) {
	case *SQLite:
		s.now = now
	case *Memory:
		s.now = now
	default:
		panic("SetClock: not a store of this package")
	}
}

// ExecSQL runs query on a SQLite store's database, as something other
// than myelin would (the suite's damaged-record cases).
func ExecSQL(s Store, query string) error {
	_, err := s.(*SQLite).db.Exec(query)
	return err
}
