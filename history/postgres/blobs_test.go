package postgres

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
)

// blobSchema is a new schema for t and a DSN whose search_path is it and
// whose sessions are named after it (application_name), so that a test
// can find them in pg_stat_activity.
func blobSchema(t *testing.T) (name, dsn string) {
	t.Helper()
	name, dsn = pgtest.Schema(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return name, u.String()
}

// openBlobStore opens the store of dsn, closed when t ends.
func openBlobStore(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawConn is a plain connection to dsn, as another host's or an older
// myelin's, closed when t ends.
func rawConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// A database an earlier myelin made (layout 1: no blob tables) is brought
// to this myelin's layout at Open, its conversations as they were, and
// then keeps their files.
func TestALayoutOneDatabaseIsMigratedAtOpenAndKeepsFiles(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	conn := rawConn(t, dsn)
	const created = "2026-12-01T10:00:00Z"
	for _, sql := range []string{
		`CREATE TABLE myelin_layout (version integer NOT NULL)`,
		`INSERT INTO myelin_layout (version) VALUES (1)`,
		migrations[0],
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("making a layout-1 database: %v", err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO conversations (id, system, created, updated, crc) VALUES ('old', '', $1, now(), $2)`,
		created, record.RecordChecksum("old", "", created, "", "")); err != nil {
		t.Fatal(err)
	}

	s := openBlobStore(t, dsn)
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM myelin_layout`).Scan(&version); err != nil || version != Layout || Layout < 2 {
		t.Fatalf("after Open the layout is %d (%v); want this myelin's, %d (2 or more)", version, err, Layout)
	}
	if c, err := s.Get(ctx, "old"); err != nil || c.Created.Format(record.TimeFormat) != created {
		t.Fatalf("the layout-1 conversation after the migration: %+v, %v", c, err)
	}
	data := []byte("kept after the migration\n")
	if _, err := s.PutBlob(ctx, "old", ".myelin/tool-results/x.txt", data); err != nil {
		t.Fatal(err)
	}
	if _, got, err := openBlobStore(t, dsn).BlobAt(ctx, "old", ".myelin/tool-results/x.txt"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("BlobAt after the migration = %q, %v; want %q", got, err, data)
	}
}

// Two hosts keeping a file at one path at once: the one that waits on the
// other's uncommitted insert sees its commit, and succeeds when the bytes
// are the same, or is refused with ErrBlobTaken when they are not. The
// other host is a plain connection left inside its PutBlob's transaction
// until this one waits on it.
func TestTwoHostsKeepingAFileAtOnePathAtOnce(t *testing.T) {
	const path = ".myelin/tool-results/20261203-call_1.txt"
	for _, tc := range []struct {
		name        string
		first, mine string
		want        error
	}{
		{"the same bytes both succeed", "the output\n", "the output\n", nil},
		{"other bytes are refused", "the output\n", "other output\n", history.ErrBlobTaken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			name, dsn := blobSchema(t)
			s := openBlobStore(t, dsn)
			if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			other, err := rawConn(t, dsn).Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback(ctx)
			first := []byte(tc.first)
			if _, err := other.Exec(ctx, `INSERT INTO blobs (hash, data) VALUES ($1, $2)`, history.BlobHash(first), first); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Exec(ctx, `INSERT INTO blob_files (conversation, path, hash) VALUES ('c', $1, $2)`, []byte(path), history.BlobHash(first)); err != nil {
				t.Fatal(err)
			}

			done := make(chan error, 1)
			go func() {
				_, err := s.PutBlob(ctx, "c", path, []byte(tc.mine))
				done <- err
			}()
			waitForALockWait(t, rawConn(t, dsn), name, done)
			if err := other.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			err = <-done
			if (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("PutBlob beside the other host's = %v; want %v", err, tc.want)
			}
			hash, got, err := s.BlobAt(ctx, "c", path)
			if err != nil || !bytes.Equal(got, first) || hash != history.BlobHash(first) {
				t.Fatalf("BlobAt = %s, %q, %v; want the first host's %q", hash, got, err, first)
			}
			if tc.want != nil {
				if data, err := s.BlobByHash(ctx, history.BlobHash([]byte(tc.mine))); !errors.Is(err, history.ErrNotFound) {
					t.Fatalf("the refused bytes are kept: %q, %v", data, err)
				}
			}
		})
	}
}

// waitForALockWait returns once a session named app waits on a lock (the
// PutBlob under test, blocked by the other host's transaction), failing t
// if the PutBlob ends first (it did not wait).
func waitForALockWait(t *testing.T, conn *pgx.Conn, app string, done chan error) {
	t.Helper()
	for {
		select {
		case err := <-done:
			t.Fatalf("PutBlob returned (%v) without waiting for the other host's transaction", err)
		default:
		}
		var waiting int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		time.Sleep(time.Millisecond) // not a bound: a pause between polls
	}
}

// Many PutBlobs of one file from two openings at once all succeed, and
// the file is kept once.
func TestManyHostsKeepingTheSameFileAtOnceAllSucceed(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	hosts := []*Store{openBlobStore(t, dsn), openBlobStore(t, dsn)}
	if err := hosts[0].Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("row of output\n"), 1000)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			hash, err := hosts[i%2].PutBlob(ctx, "c", ".myelin/tool-results/same.txt", data)
			if err == nil && hash != history.BlobHash(data) {
				err = errors.New("PutBlob's hash is " + hash)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	var blobs, files int
	if err := hosts[0].pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM blob_files)`).Scan(&blobs, &files); err != nil || blobs != 1 || files != 1 {
		t.Fatalf("%d blobs and %d files kept (%v); want 1 and 1", blobs, files, err)
	}
}
