package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// A database of layout 3 (no checksum of a conversation's last update
// time) is brought to this myelin's layout at Open: its conversation reads
// back with its time as it was, now checksummed; an Append (a time to the
// nanosecond, kept to the microsecond) reads back; and a last update time
// changed behind the store's back is then reported, by Get and List.
func TestALayoutThreeDatabaseGetsItsUpdateTimesChecksummed(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	conn := rawConn(t, dsn)
	const created = "2026-12-01T10:00:00Z"
	updated := time.Date(2026, 12, 1, 10, 5, 0, 123456000, time.UTC)
	for _, sql := range append([]string{
		`CREATE TABLE myelin_layout (version integer NOT NULL)`,
		`INSERT INTO myelin_layout (version) VALUES (3)`,
	}, migrations[:3]...) {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("making a layout-3 database: %v", err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO conversations (id, system, created, updated, crc) VALUES ('old', '', $1, $2, $3)`,
		created, updated, record.RecordChecksum("old", "", created, "", "")); err != nil {
		t.Fatal(err)
	}
	s := openBlobStore(t, dsn)
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM myelin_layout`).Scan(&version); err != nil || version != Layout || Layout < 4 {
		t.Fatalf("after Open the layout is %d (%v); want this myelin's, %d (4 or more)", version, err, Layout)
	}
	if c, err := s.Get(ctx, "old"); err != nil || !c.Updated.Equal(updated) {
		t.Fatalf("the layout-3 conversation after the migration: %+v, %v; want updated %v", c, err, updated)
	}
	h, err := s.Claim(ctx, "old", history.NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(history.Writing(ctx, h), "old", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hello"}}}); err != nil {
		t.Fatal(err)
	}
	c, err := openBlobStore(t, dsn).Get(ctx, "old")
	if err != nil || c.Messages != 1 || !c.Updated.After(updated) {
		t.Fatalf("after an append: %+v, %v", c, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE conversations SET updated = updated + interval '1 microsecond'`); err != nil {
		t.Fatal(err)
	}
	other := openBlobStore(t, dsn)
	_, getErr := other.Get(ctx, "old")
	_, listErr := other.List(ctx)
	for name, err := range map[string]error{"Get": getErr, "List": listErr} {
		if !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "conversation old is damaged: its last update time") {
			t.Errorf("%s after the time was moved by a microsecond: %v; want ErrDamaged naming the last update time", name, err)
		}
	}
}
