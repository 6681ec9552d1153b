package history_test

import (
	"context"
	"database/sql"
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

// The SQLite store keeps what a request adds, not the whole of it: a
// conversation's requests cost about what the conversation does.
func TestTheSQLiteStoreKeepsARequestByWhatItAdds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := history.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, b := range storetest.RequestBodies(200) {
		total += len(b)
		if _, err := s.AddRequest(ctx, "c", history.SentRequest{Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var kept int
	if err := db.QueryRow(`SELECT SUM(LENGTH(tail)) FROM requests`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept*5 > total {
		t.Fatalf("kept %d bytes of tails for %d bytes of bodies", kept, total)
	}
}
