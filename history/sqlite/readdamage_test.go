package sqlite

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// plantRow writes a message row into conversation conv at seq behind the
// store's back, with a checksum that matches it.
func plantRow(t *testing.T, path, conv string, seq int) {
	t.Helper()
	raw := fmt.Sprintf(`{"role":"user","parts":[{"type":"text","text":"planted %d"}],"time":"2026-12-06T09:00:00Z"}`, seq)
	damage(t, path, fmt.Sprintf(`INSERT INTO messages (conversation, seq, message, crc) VALUES ('%s', %d, CAST('%s' AS BLOB), %d)`,
		conv, seq, raw, record.MessageChecksum(conv, seq, []byte(raw))))
}

// A row numbered where none of a conversation's own can be — 0 for a
// plain one, at or below base_at for a fork — is damage a read reports,
// as Get's count does: not a move to read again (the row at base_at is the
// one a whole read's tag looks at), nor a row left out unseen.
func TestARowWhereNoneOfItsOwnCanBeIsReportedByARead(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, conv string
		seq        int
	}{
		{"plain, at 0", "c", 0},
		{"fork, inside what it shares", "f", 1},
		{"fork, at its base_at", "f", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := storeWithMessages(t, t.TempDir())
			s := openStore(t, path)
			if _, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 2}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			plantRow(t, path, tc.conv, tc.seq)
			if _, err := openStore(t, path).Get(ctx, tc.conv); !errors.Is(err, history.ErrDamaged) {
				t.Fatalf("Get: %v; want ErrDamaged", err)
			}
			msgs, err := openStore(t, path).Messages(ctx, tc.conv)
			if !errors.Is(err, history.ErrDamaged) {
				t.Fatalf("Messages read %d messages, err = %v; want ErrDamaged", len(msgs), err)
			}
		})
	}
}

// A message column made a number behind the store's back is damage,
// as any bytes that no longer match their checksum.
func TestAMessageStoredAsANumberIsReportedAsDamage(t *testing.T) {
	for _, q := range []string{`UPDATE messages SET message = 12345 WHERE seq = 2`, `UPDATE messages SET message = 1.5 WHERE seq = 2`} {
		path := storeWithMessages(t, t.TempDir())
		damage(t, path, q)
		msgs, err := openStore(t, path).Messages(context.Background(), "c")
		if !errors.Is(err, history.ErrDamaged) {
			t.Errorf("%s: read %d messages, err = %v; want ErrDamaged", q, len(msgs), err)
		}
	}
}

func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd here: %v", err)
	}
	return len(ents)
}

// database/sql closes a connection it finds bad by itself (after an
// interrupted statement the driver says it is not valid); the statements
// the store prepared on it must be freed first, or SQLite keeps the
// connection and its files open.
func TestAConnectionDiscardedByDatabaseSQLLeavesNoFilesOpen(t *testing.T) {
	ctx := context.Background()
	path := storeWithMessages(t, t.TempDir())
	s := openStore(t, path)
	before := openFiles(t)
	for i := 0; i < 5; i++ {
		s.dropRead("c")
		if _, err := s.Messages(ctx, "c"); err != nil { // prepares the statements on the connection
			t.Fatal(err)
		}
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.Raw(func(any) error { return sqldriver.ErrBadConn }) // database/sql closes it
		c.Close()
	}
	s.dropRead("c")
	if _, err := s.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if after := openFiles(t); after > before+2 {
		t.Fatalf("%d files open before, %d after five connections were discarded", before, after)
	}
}

// The store's connection passes on every interface of the driver's that
// database/sql looks for.
func TestTheStoresConnectionHasTheDriversInterfaces(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Raw(func(dc any) error {
		for i, has := range driverInterfaces {
			if !has(dc.(sqldriver.Conn)) {
				t.Errorf("the driver's connection lacks interface %d of driverInterfaces", i)
			}
		}
		var own any = &ownConn{}
		for _, ok := range []bool{
			isA[sqldriver.ConnPrepareContext](own), isA[sqldriver.ConnBeginTx](own), isA[sqldriver.ExecerContext](own),
			isA[sqldriver.QueryerContext](own), isA[sqldriver.Pinger](own), isA[sqldriver.SessionResetter](own), isA[sqldriver.Validator](own),
		} {
			if !ok {
				t.Error("ownConn lacks an interface it should pass on")
			}
		}
		return nil
	})
}

func isA[T any](v any) bool { _, ok := v.(T); return ok }
