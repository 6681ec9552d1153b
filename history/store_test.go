package history_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// The conformance suite (history/storetest) on this package's stores.

func TestSQLiteKeepsTheStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Subject{Shared: true, Damage: func(t *testing.T, s history.Store, sql string) {
		if err := history.ExecSQL(s, sql); err != nil {
			t.Fatal(err)
		}
	}, Open: func(t *testing.T, now func() time.Time) func() history.Store {
		path := filepath.Join(t.TempDir(), "h.db")
		return func() history.Store {
			s, err := history.OpenSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			history.SetClock(s, now)
			return s
		}
	}})
}

func TestMemoryKeepsTheStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Subject{Open: func(t *testing.T, now func() time.Time) func() history.Store {
		s := &history.Memory{}
		history.SetClock(s, now)
		return func() history.Store { return s }
	}})
}

// The SQLite store keeps what a request adds, not the whole of it.
func TestTheSQLiteStoreKeepsARequestByWhatItAdds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := history.OpenSQLite(path)
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
