package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// The conformance suite (history/storetest) on the SQLite store.

func TestSQLiteKeepsTheStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Subject{Shared: true, Damage: func(t *testing.T, s history.Store, sql string) {
		if err := execSQL(s, sql); err != nil {
			t.Fatal(err)
		}
	}, Open: func(t *testing.T, now func() time.Time) func() history.Store {
		path := filepath.Join(t.TempDir(), "h.db")
		return func() history.Store {
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			s.now = now
			return s
		}
	}})
}

// The SQLite store keeps what a request adds, not the whole of it.
func TestTheSQLiteStoreKeepsARequestByWhatItAdds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.KeepsRequestsByWhatTheyAdd(t, s, func() int {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var kept int
		if err := db.QueryRow(`SELECT SUM(LENGTH(tail)) FROM requests`).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		return kept
	})
}

// execSQL runs query on a store's database, as something other than myelin
// would (the suite's damaged-record cases).
func execSQL(s history.Store, query string) error {
	_, err := s.(*Store).db.Exec(query)
	return err
}
