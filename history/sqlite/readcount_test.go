package sqlite

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/internal/rowdecode"
)

// addRow adds message seq to conversation c of the closed store at path
// behind the store's back, with its checksum, and without counting it in
// the conversation's record.
func addRow(t *testing.T, path string, seq int) {
	t.Helper()
	raw := fmt.Sprintf(`{"role":"user","parts":[{"type":"text","text":"planted %d"}],"time":"2026-12-06T09:00:00Z"}`, seq)
	damage(t, path, fmt.Sprintf(`INSERT INTO messages (conversation, seq, message, crc) VALUES ('c', %d, CAST('%s' AS BLOB), %d)`,
		seq, raw, record.MessageChecksum("c", seq, []byte(raw))))
}

// A conversation read whole after a restart counts its rows as it steps
// them (Get's count is not run first): a row lost behind the store's back,
// at its end or in its middle, or one added, is reported, never read as a
// shorter or longer conversation.
func TestAReadWholeReportsARowLostOrAddedBehindTheStoresBack(t *testing.T) {
	for _, tc := range []struct {
		name, damage string
		add          int // a row added with its checksum, uncounted
		want         string
	}{
		{"the last row deleted", `DELETE FROM messages WHERE seq = 3`, 0, "conversation c holds 2 messages, but 3 were stored in it"},
		{"a middle row deleted", `DELETE FROM messages WHERE seq = 2`, 0, "conversation c holds 2 messages, but 3 were stored in it"},
		{"the first row deleted", `DELETE FROM messages WHERE seq = 1`, 0, "conversation c holds 2 messages, but 3 were stored in it"},
		{"a middle row deleted, the count made to match", `DELETE FROM messages WHERE seq = 2; UPDATE conversations SET messages = 2`, 0, "conversation c: message 2 is missing (the next one stored is 3)"},
		{"a row added after the last", ``, 4, "conversation c holds 4 messages, but 3 were stored in it"},
		{"a row added after a gap", ``, 5, "conversation c holds 4 messages, but 3 were stored in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := storeWithMessages(t, t.TempDir())
			if tc.damage != "" {
				damage(t, path, tc.damage)
			}
			if tc.add > 0 {
				addRow(t, path, tc.add)
			}
			msgs, err := openStore(t, path).Messages(context.Background(), "c")
			if !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read %d messages, err = %v; want ErrDamaged saying %q", len(msgs), err, tc.want)
			}
		})
	}
}

// A store that has read a conversation reads only the rows added since
// at its next read, and counts them against the conversation's count
// appended: a row added behind its back (not by an Append, which counts
// what it adds) is reported by that read, not taken as the next message.
func TestARowAddedBehindAReadersBackIsReportedByItsNextRead(t *testing.T) {
	path := storeWithMessages(t, t.TempDir())
	s := openStore(t, path)
	ctx := context.Background()
	if msgs, err := s.Messages(ctx, "c"); err != nil || len(msgs) != 3 {
		t.Fatalf("first read: %d messages, %v", len(msgs), err)
	}
	addRow(t, path, 4)
	msgs, err := s.Messages(ctx, "c")
	if !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "conversation c holds 4 messages, but 3 were stored in it") {
		t.Fatalf("read %d messages, err = %v; want the added row reported", len(msgs), err)
	}
}

// reusingRows is a driver's rows that hand each row's message in one
// buffer, overwritten by the next row: a driver whose blob memory is
// SQLite's until the next step.
type reusingRows struct {
	sqldriver.Rows
	buf []byte
}

func (r *reusingRows) Next(dest []sqldriver.Value) error {
	if err := r.Rows.Next(dest); err != nil {
		return err
	}
	if b, ok := dest[1].([]byte); ok {
		if cap(r.buf) < len(b) {
			r.buf = make([]byte, 0, 2*len(b))
		}
		r.buf = append(r.buf[:0], b...)
		dest[1] = r.buf
	}
	return nil
}

// The read keeps each row's message as the driver gives it, without a
// copy of its own: that is right only while the driver gives every row's
// bytes in memory of their own. With the store's driver, a conversation
// of many rows of different lengths, more than a decoding batch, read
// after a restart, comes back byte for byte as stored. With a driver that
// reused its memory (reusingRows) the rows kept would be the later rows'
// bytes: that is reported as damage by the checksum of each row, checked
// once the rows after it are stepped, never read as another message.
func TestARowsBytesAreItsOwnAfterTheNextStep(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	const n = 3*rowdecode.Batch + 17
	text := func(i int) string {
		return fmt.Sprintf("message %d %s", i, strings.Repeat("abcdefghij"[i%10:i%10+1], i%97))
	}
	var msgs []history.Message
	for i := range n {
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: text(i)}}})
	}
	if err := s.Append(ctx, "c", msgs...); err != nil {
		t.Fatal(err)
	}
	s.Close()

	got, err := openStore(t, path).Messages(ctx, "c")
	if err != nil || len(got) != n {
		t.Fatalf("read %d messages, %v; want %d", len(got), err, n)
	}
	for i, m := range got {
		if len(m.Parts) != 1 || m.Parts[0].Text != text(i) {
			t.Fatalf("message %d is %+v, want the text %q", i+1, m.Parts, text(i))
		}
	}

	// the same rows through a driver reusing its memory
	r := openStore(t, path)
	conn, err := r.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var readErr error
	err = conn.Raw(func(dc any) error {
		st, err := r.rawPrepared(ctx, dc)
		if err != nil {
			return err
		}
		vals, err := named([]any{0, 0, "c"})
		if err != nil {
			return err
		}
		rows, err := st.readTagged.(sqldriver.StmtQueryContext).QueryContext(ctx, vals)
		if err != nil {
			return err
		}
		defer rows.Close()
		d := newRowDecoder(r, "c", n)
		_, stepErr := r.stepDriverRows(ctx, &reusingRows{Rows: rows}, "c", 0, d, &readTag{})
		_, readErr = d.Finish(nil)
		return stepErr
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(readErr, history.ErrDamaged) || !strings.Contains(readErr.Error(), "no longer match their checksum") {
		t.Fatalf("rows overwritten after their step: err = %v; want each reported by its checksum", readErr)
	}
}

// endingContext is a context whose Err is context.Canceled from its
// second call on, and that has no Done channel: a read sees it end
// after it has begun, at the first look past its start.
type endingContext struct {
	context.Context
	looks int
}

func (c *endingContext) Err() error {
	if c.looks++; c.looks > 1 {
		return context.Canceled
	}
	return nil
}

// A read ended by its context while it steps a long conversation's rows
// stops there, says so, and leaves the store's connection as it found
// it: no statement left open holding an old snapshot, so that the same
// store then reads the whole conversation and appends after another
// opening has appended.
func TestAReadEndedWhileItStepsStopsAndLeavesTheConnectionFree(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	var msgs []history.Message
	for i := range 4 * rowdecode.Batch {
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprint("m", i)}}})
	}
	if err := s.Append(ctx, "c", msgs...); err != nil {
		t.Fatal(err)
	}
	s.Close()

	r := openStore(t, path)
	got, err := r.Messages(&endingContext{Context: ctx}, "c")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("read %d messages, err = %v; want context.Canceled", len(got), err)
	}
	if err := openStore(t, path).Append(ctx, "c", msgs[0]); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Messages(ctx, "c"); err != nil || len(got) != len(msgs)+1 {
		t.Fatalf("the read after: %d messages, %v; want %d", len(got), err, len(msgs)+1)
	}
	if err := r.Append(ctx, "c", msgs[1]); err != nil {
		t.Fatalf("an append after another opening's: %v", err)
	}
}
