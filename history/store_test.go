package history_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// The conformance suite (history/storetest) on this package's stores.

func TestSQLiteKeepsTheStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Subject{Shared: true, Open: func(t *testing.T, now func() time.Time) func() history.Store {
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
