package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/internal/rowdecode"
)

// This file is how a read of several statements — a fork's record, the
// part of its messages it shares read through its base (a statement or
// more per conversation up the chain), its own rows — gives the fork at
// one moment while other processes rewind, switch and write. Each
// statement reads the fork's record version (versionColumn) with what it
// reads, and a pass whose versions disagree is read again: a rewind of
// the base below the fork's point writes the fork's record (it is
// pointed at the branch), and so does the switch that points it back,
// so a base moved and moved back between the statements is seen, which
// a comparison of the link (base, base_at) is not. That costs no
// statement: the version rides the statements the read makes anyway.
// A record written in every pass (a writer appending to the fork as it
// is read, a rewind after a rewind) would have the read give up; the
// last pass instead reads in one REPEATABLE READ READ ONLY transaction
// (oneMoment), whose statements all see one snapshot: its BEGIN and
// COMMIT, two round trips, are paid only then.

// oneMoment runs pass, a read of conversation id that reports again when
// what it read changed between its statements (nothing returned then),
// until it reads one moment: twice on the pool, then in one snapshot,
// where nothing changes between statements. A pass within a snapshot
// already (a base read by its fork's pass) runs there once.
func (s *Store) oneMoment(ctx context.Context, id string, pass func(ctx context.Context) (again bool, err error)) error {
	if _, in := ctx.Value(snapshotKey{}).(pgx.Tx); !in {
		for range 2 {
			if again, err := pass(ctx); err != nil || !again {
				return err
			}
		}
	}
	return s.inSnapshot(ctx, id, func(ctx context.Context) error {
		again, err := pass(ctx)
		if err == nil && again {
			err = fmt.Errorf("history store %s: reading conversation %s: it or the conversation it shares its first messages with changed within one snapshot (a read-only REPEATABLE READ transaction): %w", s.name, id, history.ErrDamaged)
		}
		return err
	})
}

// snapshotKey is the context key of the transaction a read runs in
// (inSnapshot), for the statements of that read only.
type snapshotKey struct{}

// querier is what a read runs its statements on: the pool, or the
// transaction of its snapshot.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// q is what a read's statement runs on: the snapshot ctx carries, if
// any, else the pool.
func (s *Store) q(ctx context.Context) querier {
	if tx, ok := ctx.Value(snapshotKey{}).(pgx.Tx); ok {
		return tx
	}
	return s.pool
}

// inSnapshot runs read, a read of conversation id, in one REPEATABLE READ
// READ ONLY transaction (or in the one ctx carries): its statements all
// see the database as one snapshot, taken at its first. It writes
// nothing, so it neither waits for nor holds up a writer.
func (s *Store) inSnapshot(ctx context.Context, id string, read func(ctx context.Context) error) error {
	if _, in := ctx.Value(snapshotKey{}).(pgx.Tx); in {
		return read(ctx)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.explain("reading conversation "+id+" in one snapshot", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit, nothing to do
	if err := read(context.WithValue(ctx, snapshotKey{}, tx)); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return s.explain("reading conversation "+id+" in one snapshot", err)
	}
	return nil
}

// pausedInRead, when set (by tests only), is called by every read of a
// fork's messages through its base (readAll, between, markedCold): before
// it reads them (done false) and after, before it reads the fork's record
// again (done true). A test rewrites the base there, as another process
// may.
var pausedInRead func(id string, done bool)

// throughBase calls pausedInRead, when set.
func throughBase(id string, done bool) {
	if pausedInRead != nil {
		pausedInRead(id, done)
	}
}

// versionColumn is a conversation's (c) record version: its row's xmin,
// the transaction that last wrote it, new with every UPDATE (an append,
// a rewind, a switch, a repoint) and with none of the row locks the
// writes take. Two reads of it that agree saw no write of the record
// between them, however it was written and written back — but for one
// chance in 2^32: a record last written 2^32 transactions or more before
// (freezing keeps the raw xmin) whose write during the read lands on an
// xid equal to the old one modulo 2^32. Read as it is stored (xid: 32
// bits, scanned into a uint32), no cast computed per row.
const versionColumn = `c.xmin`

// getVersioned is Get of conversation id with its record's version.
func (s *Store) getVersioned(ctx context.Context, id string) (history.Conversation, uint32, error) {
	var version uint32
	c, err := s.scanConversation(extraScan{s.q(ctx).QueryRow(ctx, `SELECT `+recordColumns+`, `+versionColumn+` FROM conversations c WHERE c.id = $1`, id), []any{&version}})
	if errors.Is(err, pgx.ErrNoRows) {
		return history.Conversation{}, 0, record.NotFound(id)
	}
	if err != nil && !errors.Is(err, history.ErrDamaged) {
		return history.Conversation{}, 0, s.explain("reading conversation "+id, err)
	}
	return c, version, err
}

// extraScan is a row whose Scan fills extra after its destinations.
type extraScan struct {
	pgx.Row
	extra []any
}

// Scan scans the row into dest, then extra.
func (r extraScan) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }

// moved reports whether conversation id's record is no longer of version
// (or gone): written since, so that what was read of it and its base
// between may be of two moments.
func (s *Store) moved(ctx context.Context, id string, version uint32) (bool, error) {
	var now uint32
	err := s.q(ctx).QueryRow(ctx, `SELECT `+versionColumn+` FROM conversations c WHERE c.id = $1`, id).Scan(&now)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, s.explain("reading conversation "+id, err)
	}
	return now != version, nil
}

// versionedRows is ownRows with the record's version (own.version), for
// a read that compares it with the one read before its base's messages.
func (s *Store) versionedRows(ctx context.Context, id string, from, to int, b *rowdecode.Batches, decode int) (ownState, error) {
	var version uint32
	own, err := s.scanRows(ctx, id, b, decode, []any{&version}, `SELECT c.base, c.base_at, c.messages, `+versionColumn+`, m.seq, m.message, m.crc FROM conversations c
		LEFT JOIN messages m ON m.conversation = c.id AND m.seq >= $2 AND m.seq <= $3 WHERE c.id = $1 ORDER BY m.seq`, id, from, to)
	own.version = version
	return own, err
}
