package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	makeLayout(t, conn, 3)
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

// A database of layout 4 (no forks) is brought to this myelin's layout at
// Open: its conversation reads back as it was, sharing nothing, with no
// checksum to fill in (0 is a record sharing nothing), and it forks and
// rewinds; a fork's point changed behind the store's back is then
// reported.
func TestALayoutFourDatabaseForksItsConversations(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	conn := rawConn(t, dsn)
	const created = "2026-12-01T10:00:00Z"
	updated := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	makeLayout(t, conn, 4)
	raws := make([][]byte, 3)
	for i := range raws {
		raw, err := history.EncodeMessage(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprint("old ", i+1)}}, Time: updated})
		if err != nil {
			t.Fatal(err)
		}
		raws[i] = raw
	}
	if _, err := conn.Exec(ctx, `INSERT INTO conversations (id, system, created, updated, messages, crc, updated_crc) VALUES ('old', 'sys', $1, $2, 3, $3, $4)`,
		created, updated, record.RecordChecksum("old", "sys", created, "", ""), updatedChecksum("old", updated)); err != nil {
		t.Fatal(err)
	}
	for i, raw := range raws {
		if _, err := conn.Exec(ctx, `INSERT INTO messages (conversation, seq, message, crc) VALUES ('old', $1, $2, $3)`, i+1, raw, record.MessageChecksum("old", i+1, raw)); err != nil {
			t.Fatal(err)
		}
	}
	s := openBlobStore(t, dsn)
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM myelin_layout`).Scan(&version); err != nil || version != Layout || Layout < 5 {
		t.Fatalf("after Open the layout is %d (%v); want this myelin's, %d (5 or more)", version, err, Layout)
	}
	if c, err := s.Get(ctx, "old"); err != nil || c.Messages != 3 || c.Base != "" || c.BaseAt != 0 || c.BranchOf != "" {
		t.Fatalf("the layout-4 conversation after the migration: %+v, %v; want 3 messages, sharing nothing", c, err)
	}
	f, err := s.Fork(ctx, history.Conversation{ID: "fork", Base: "old", BaseAt: 2})
	if err != nil || f.Base != "old" || f.BaseAt != 2 || f.System != "sys" || f.Messages != 2 {
		t.Fatalf("Fork of the layout-4 conversation at 2: %+v, %v", f, err)
	}
	if _, err := s.Rewind(ctx, "old", 1); err != nil {
		t.Fatalf("Rewind of the layout-4 conversation: %v", err)
	}
	msgs, err := openBlobStore(t, dsn).Messages(ctx, "fork")
	if err != nil || len(msgs) != 2 || msgs[1].Text() != "old 2" {
		t.Fatalf("the fork after its base was rewound: %d messages, %v; want old 1, old 2", len(msgs), err)
	}
	if _, err := conn.Exec(ctx, `UPDATE conversations SET base_at = 1 WHERE id = 'fork'`); err != nil {
		t.Fatal(err)
	}
	if _, err := openBlobStore(t, dsn).Get(ctx, "fork"); !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "conversation fork is damaged: the messages it shares") {
		t.Errorf("Get of a fork whose point was changed: %v; want ErrDamaged naming what it shares", err)
	}
}

// makeLayout makes the tables of layout version, as a myelin of that
// layout would, on conn.
func makeLayout(t *testing.T, conn *pgx.Conn, version int) {
	t.Helper()
	for _, sql := range append([]string{
		`CREATE TABLE myelin_layout (version integer NOT NULL)`,
		fmt.Sprintf(`INSERT INTO myelin_layout (version) VALUES (%d)`, version),
	}, migrations[:version]...) {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatalf("making a layout-%d database: %v", version, err)
		}
	}
}

// A database of layout 7 (no marks) is brought to this myelin's layout at
// Open: its conversation reads back as it was, under no mark, and then
// keeps one, read back from its place by another opening, dropped by a
// rewind.
func TestALayoutSevenDatabaseKeepsMarks(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	conn := rawConn(t, dsn)
	const created = "2026-12-01T10:00:00Z"
	updated := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	makeLayout(t, conn, 7)
	if _, err := conn.Exec(ctx, `INSERT INTO conversations (id, system, created, updated, messages, crc, updated_crc) VALUES ('old', 'sys', $1, $2, 4, $3, $4)`,
		created, updated, record.RecordChecksum("old", "sys", created, "", ""), updatedChecksum("old", updated)); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i := range 4 {
		texts = append(texts, fmt.Sprint("old ", i+1))
		raw, err := history.EncodeMessage(history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: texts[i]}}, Time: updated})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO messages (conversation, seq, message, crc) VALUES ('old', $1, $2, $3)`, i+1, raw, record.MessageChecksum("old", i+1, raw)); err != nil {
			t.Fatal(err)
		}
	}
	s := openBlobStore(t, dsn)
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM myelin_layout`).Scan(&version); err != nil || version != Layout || Layout < 8 {
		t.Fatalf("after Open the layout is %d (%v); want this myelin's, %d (8 or more)", version, err, Layout)
	}
	read := func(st *Store, want history.Mark, wantTexts []string, when string) {
		t.Helper()
		m, msgs, err := st.Marked(ctx, "old")
		var got []string
		for _, msg := range msgs {
			got = append(got, msg.Text())
		}
		if err != nil || m.From != want.From || string(m.Facts) != string(want.Facts) || fmt.Sprint(got) != fmt.Sprint(wantTexts) {
			t.Fatalf("%s: Marked = from %d (%q), %q, %v; want from %d (%q), %q", when, m.From, m.Facts, got, err, want.From, want.Facts, wantTexts)
		}
	}
	read(s, history.Mark{}, texts, "the layout-7 conversation after the migration")
	m := history.Mark{From: 3, Facts: []byte("facts")}
	if err := s.SetMark(ctx, "old", m); err != nil {
		t.Fatal(err)
	}
	read(openBlobStore(t, dsn), m, texts[3:], "another opening, after a mark was set")
	if _, err := s.Rewind(ctx, "old", 3); err != nil {
		t.Fatal(err)
	}
	read(openBlobStore(t, dsn), history.Mark{}, texts[:3], "another opening, after a rewind")
}

// A myelin of layout 5 to 7 still running when a newer one brought the
// database to layout 8 knows no marks: its Rewind and Switch would leave
// a mark standing over messages they moved. Both write the record in an
// UPDATE that names base_at (SET messages, [base,] base_at, base_crc,
// updated, updated_crc), which drops the mark (the layout's trigger);
// the UPDATE of an Append (updated, updated_crc, messages) and of a
// repoint (base, base_crc), which leave a conversation's messages as
// they were, leave it.
func TestAnOlderMyelinsRewindDropsTheMarkItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	s := openBlobStore(t, dsn)
	conn := rawConn(t, dsn)
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "one"}}}); err != nil {
		t.Fatal(err)
	}
	m := history.Mark{From: 1, Facts: []byte("facts")}
	for _, u := range []struct {
		sql   string
		drops bool
	}{
		{`UPDATE conversations SET updated = updated, updated_crc = updated_crc, messages = messages + 0 WHERE id = 'c'`, false},
		{`UPDATE conversations c SET base = v.base, base_crc = v.crc FROM (SELECT 'c' AS id, base, base_crc AS crc FROM conversations WHERE id = 'c') v WHERE c.id = v.id`, false},
		{`UPDATE conversations SET messages = messages, base_at = base_at, base_crc = base_crc, updated = updated, updated_crc = updated_crc WHERE id = 'c'`, true},
		{`UPDATE conversations SET messages = messages, base = base, base_at = base_at, base_crc = base_crc, updated = updated, updated_crc = updated_crc WHERE id = 'c'`, true},
	} {
		if err := s.SetMark(ctx, "c", m); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, u.sql); err != nil {
			t.Fatal(err)
		}
		want := m
		if u.drops {
			want = history.Mark{}
		}
		got, _, err := openBlobStore(t, dsn).Marked(ctx, "c")
		if err != nil || got.From != want.From || string(got.Facts) != string(want.Facts) {
			t.Errorf("after %s: the mark is from %d (%q), %v; want from %d (%q)", u.sql, got.From, got.Facts, err, want.From, want.Facts)
		}
	}
}

// A myelin of layout 5 to 7 still running when a newer one brought the
// database to layout 8 deletes a conversation as layout 7 did (its kept
// results, claims, requests, files and messages, then its record),
// knowing nothing of marks: the mark a newer myelin set goes with the
// record (ON DELETE CASCADE), not in the way of its delete.
func TestAnOlderMyelinsDeleteTakesTheMarkItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	s := openBlobStore(t, dsn)
	conn := rawConn(t, dsn)
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "one"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(ctx, "c", history.Mark{From: 1, Facts: []byte("f")}); err != nil {
		t.Fatal(err)
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []string{ // layout 7's Delete
			`DELETE FROM kept WHERE conversation = ANY($1)`,
			`DELETE FROM claims WHERE conversation = ANY($1)`,
			`DELETE FROM requests WHERE conversation = ANY($1)`,
			`DELETE FROM blob_files WHERE conversation = ANY($1)`,
			`DELETE FROM messages WHERE conversation = ANY($1)`,
			`DELETE FROM conversations WHERE id = ANY($1)`,
		} {
			if _, err := tx.Exec(ctx, q, []string{"c"}); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("an older myelin's Delete of a marked conversation: %v", err)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM conversation_marks`).Scan(&left); err != nil || left != 0 {
		t.Errorf("marks left after the delete: %d, %v; want 0", left, err)
	}
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if m, msgs, err := openBlobStore(t, dsn).Marked(ctx, "c"); err != nil || m.From != 0 || len(msgs) != 0 {
		t.Errorf("a conversation made again under the id: Marked = from %d, %d messages, %v; want no mark, none", m.From, len(msgs), err)
	}
}
