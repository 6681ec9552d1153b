package sqlite

import (
	"bytes"
	"context"
	sqldriver "database/sql/driver"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// The round's statements take their arguments as database/sql's default
// conversion makes them, for every type the store passes and any other.
func TestRoundArgumentsAreConvertedAsDatabaseSQLConvertsThem(t *testing.T) {
	type named string
	for _, a := range []any{nil, int64(-7), 42, "text", []byte("bytes"), json.RawMessage(`{"a":1}`),
		int32(5), uint8(3), 1.5, true, time.Unix(1, 0).UTC(), named("a named string")} {
		want, wantErr := sqldriver.DefaultParameterConverter.ConvertValue(a)
		got, err := driverValue(a)
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%T %v: converted to %T %v (%v), database/sql makes %T %v (%v)", a, a, got, got, err, want, want, wantErr)
		}
	}
	if _, err := driverValue(struct{}{}); err == nil {
		t.Error("a struct was converted: database/sql refuses it")
	}
}

// A statement's buffered arguments hold nothing past its call: the bytes
// of the message an Append inserted are not kept alive by the connection
// until its next statement.
func TestTheRoundsStatementsKeepNoArgumentOrRowPastTheirCall(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 1<<10)
	if err := s.Append(ctx, "c", userText(string(big))); err != nil {
		t.Fatal(err)
	}
	var st *rawStmts
	if err := s.rawWriteAnd(ctx, "looking", true, func(tx rawTx) error { st = tx.st; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if cap(st.args) == 0 || cap(st.row) == 0 {
		t.Fatalf("the statements' buffers are not used (room for %d arguments, %d columns)", cap(st.args), cap(st.row))
	}
	for i, a := range st.args[:cap(st.args)] {
		if a.Value != nil {
			t.Errorf("argument %d is still held: %T", i+1, a.Value)
		}
	}
	for i, v := range st.row[:cap(st.row)] {
		if v != nil {
			t.Errorf("column %d of the last row read is still held: %T", i+1, v)
		}
	}
}

// The append's read names its columns briefly: the driver copies every
// column's name at every query, and an expression's name is its text (the
// checksum's, ~1 KiB, at every Append).
func TestTheAppendsReadNamesItsColumnsBriefly(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	err := s.rawWriteAnd(ctx, "reading", true, func(tx rawTx) error {
		rows, err := tx.st.nextSeq.(sqldriver.StmtQueryContext).QueryContext(ctx, []sqldriver.NamedValue{{Ordinal: 1, Value: "c"}})
		if err != nil {
			return err
		}
		defer rows.Close()
		for i, name := range rows.Columns() {
			if len(name) > 3 {
				t.Errorf("column %d is named %q (%d bytes)", i+1, name, len(name))
			}
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}
