package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// claim is a conversation's claim as stored.
type claim struct {
	history.Holder // Epoch included
	expires        time.Time
}

// alive reports whether the claim's holder may still be writing at now
// (the database's time): its lease runs and it is not known gone (on this
// node, its process ended: record.Alive).
func (c *claim) alive(now time.Time) bool {
	return record.Alive(now, c.expires, record.ThisNode(), c.Node, c.PID)
}

// writeState is what a write read of its conversation under the row lock.
type writeState struct {
	last     int       // the number of the last message stored (a fork's base_at when it has none of its own)
	appended int       // how many messages were appended, by the record
	now      time.Time // the time claims are judged at: the database's (or the test clock)
	claim    *claim    // nil: none held (never taken, or released)
	epoch    int64     // the stored epoch, also of a released claim; 0: never claimed
}

// counts is the error a write doing doing gets when the conversation's
// last message stored is not the count of messages appended to it (a row
// added or lost behind the store's back), or nil.
func (s *Store) counts(doing string, w writeState) error {
	if w.last != w.appended {
		return fmt.Errorf("history store %s: %s: its last message is number %d, but %d were stored in it: %w", s.name, doing, w.last, w.appended, history.ErrDamaged)
	}
	return nil
}

// pausedInWrite, when set (by tests only), is called by every write of a
// conversation once it holds the conversation's row lock, before it
// writes: a test pauses a writer there, as a stopped process would be.
var pausedInWrite func(id string)

// errNoConversation stops a write whose conversation is not there.
var errNoConversation = errors.New("no such conversation")

// write runs fn in one transaction that first locks conversation id's row
// (SELECT ... FOR UPDATE) and then, in a statement that starts after the
// lock is held and so sees every write committed before it, reads where
// the conversation ends, its claim and the time. Every write of a
// conversation — Append, Keep, Claim, Renew, Release, AddRequest — takes
// that lock first, so they happen one after another, and a claim taken
// over is seen by every write that follows it: fencing. Lazy writes
// commit without waiting for the server's disk. A transaction the server
// ends to break a deadlock is tried again (retrying), fn with it.
func (s *Store) write(ctx context.Context, id, doing string, lazy bool, fn func(tx pgx.Tx, w writeState) error) error {
	return retrying(ctx, func() error { return s.writeOnce(ctx, id, doing, lazy, fn) })
}

// writeOnce is one try of write's transaction.
func (s *Store) writeOnce(ctx context.Context, id, doing string, lazy bool, fn func(tx pgx.Tx, w writeState) error) error {
	tx, err := s.pool.BeginTx(ctx, readCommitted)
	if err != nil {
		return s.explain(doing, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var w writeState
	b := &pgx.Batch{}
	if lazy {
		b.Queue(`SET LOCAL synchronous_commit TO off`)
	}
	b.Queue(`SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, id).QueryRow(func(row pgx.Row) error {
		var one int
		err := row.Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoConversation
		}
		return err
	})
	b.Queue(`SELECT (SELECT COALESCE(max(seq), c.base_at) FROM messages WHERE conversation = $1), c.messages, COALESCE($2::timestamptz, now()),
			cl.token, cl.pid, cl.host, cl.node, cl.since, cl.expires, cl.epoch
		FROM conversations c LEFT JOIN claims cl ON cl.conversation = c.id WHERE c.id = $1`, id, s.clockArg()).QueryRow(func(row pgx.Row) error {
		var token, host, node *string
		var pid *int32
		var since, expires *time.Time
		var epoch *int64
		if err := row.Scan(&w.last, &w.appended, &w.now, &token, &pid, &host, &node, &since, &expires, &epoch); err != nil {
			return err
		}
		w.now = w.now.UTC().Truncate(time.Microsecond) // as the database keeps it
		if epoch != nil {
			w.epoch = *epoch
		}
		if token != nil && *token != "" {
			w.claim = &claim{Holder: history.Holder{Token: *token, PID: int(*pid), Host: *host, Node: *node, Since: since.UTC(), Epoch: *epoch}, expires: expires.UTC()}
		}
		return nil
	})
	if err := tx.SendBatch(ctx, b).Close(); errors.Is(err, errNoConversation) {
		return record.NotFound(id)
	} else if err != nil {
		return s.explain(doing, err)
	}
	if pausedInWrite != nil {
		pausedInWrite(id)
	}
	if err := fn(tx, w); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return s.explain("committing: "+doing, err)
	}
	return nil
}

// allows is the claim check of every write of conversation id, on w read
// under its row lock: under history.Writing(ctx, h), h must hold the claim
// — its token and its epoch; without, no live holder may have it.
func (s *Store) allows(ctx context.Context, id string, w writeState) error {
	if h, writing := history.WriterOf(ctx); writing {
		if w.claim == nil {
			return record.ClaimLost(id, h.String(), "")
		}
		if w.claim.Token != h.Token || w.claim.Epoch != h.Epoch {
			return record.ClaimLost(id, h.String(), w.claim.Holder.String())
		}
		return nil
	}
	if w.claim != nil && w.claim.alive(w.now) {
		return &history.HeldError{Conversation: id, Holder: w.claim.Holder, Expires: w.claim.expires}
	}
	return nil
}

// Claim takes conversation id's claim for h (see history.Store.Claim). A
// takeover gives h the next epoch; claiming again what h holds keeps it
// and renews the lease. The lease runs on the database's clock.
func (s *Store) Claim(ctx context.Context, id string, h history.Holder, lease time.Duration) (history.Holder, error) {
	if err := record.CheckClaim(id, h.Token, lease); err != nil {
		return h, err
	}
	doing := "claiming conversation " + id
	// synced: a takeover lost to a crash of the server would give the
	// claim back to the holder it was taken from
	err := s.write(ctx, id, doing, false, func(tx pgx.Tx, w writeState) error {
		c := w.claim
		switch {
		case c != nil && c.Token == h.Token:
			h.Since, h.Epoch = c.Since, c.Epoch
		case c != nil && c.alive(w.now):
			return &history.HeldError{Conversation: id, Holder: c.Holder, Expires: c.expires}
		default:
			h.Since, h.Epoch = w.now, w.epoch+1
		}
		_, err := tx.Exec(ctx, `INSERT INTO claims (conversation, token, pid, host, node, since, expires, epoch) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (conversation) DO UPDATE SET token = excluded.token, pid = excluded.pid, host = excluded.host, node = excluded.node,
				since = excluded.since, expires = excluded.expires, epoch = excluded.epoch`,
			id, h.Token, h.PID, h.Host, h.Node, h.Since, w.now.Add(lease), h.Epoch)
		if err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
	return h, err
}

// Renew extends h's claim on id to lease from the database's now (see
// history.Store.Renew); it never takes a claim.
func (s *Store) Renew(ctx context.Context, id string, h history.Holder, lease time.Duration) error {
	if err := record.CheckClaim(id, h.Token, lease); err != nil {
		return err
	}
	doing := "renewing the claim on conversation " + id
	return s.write(ctx, id, doing, true, func(tx pgx.Tx, w writeState) error {
		if err := s.allows(history.Writing(ctx, h), id, w); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE claims SET expires = $2 WHERE conversation = $1`, id, w.now.Add(lease)); err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
}

// Release gives up h's claim on id (see history.Store.Release): the
// claim of h's token and epoch, so that a release under an epoch h no
// longer holds leaves its newer claim alone. The row stays, token
// cleared, so the next holder's epoch is larger still.
func (s *Store) Release(ctx context.Context, id string, h history.Holder) error {
	doing := "releasing the claim on conversation " + id
	err := s.write(ctx, id, doing, true, func(tx pgx.Tx, w writeState) error {
		if w.claim == nil || w.claim.Token != h.Token || w.claim.Epoch != h.Epoch {
			return nil // not h's: left as it is
		}
		if _, err := tx.Exec(ctx, `UPDATE claims SET token = '', expires = since WHERE conversation = $1`, id); err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
	if errors.Is(err, history.ErrNotFound) {
		return nil // no conversation, no claim to give up
	}
	return err
}

// Keep stores finished calls' results in one transaction, without waiting
// for the server's disk, after the claim check (see history.Store.Keep).
func (s *Store) Keep(ctx context.Context, id string, results ...history.Part) error {
	if len(results) == 0 {
		return nil
	}
	for _, p := range results {
		if err := record.CheckKept(id, p.Type == history.ToolResultPart, string(p.Type), p.CallID); err != nil {
			return err
		}
	}
	calls := make([][]byte, len(results))
	raws := make([][]byte, len(results))
	for i, p := range results {
		raw, err := history.EncodePart(p)
		if err != nil {
			return fmt.Errorf("keeping the result of call %s in conversation %s: %w", p.CallID, id, err)
		}
		calls[i], raws[i] = []byte(p.CallID), raw
	}
	doing := "keeping finished calls' results in conversation " + id
	return s.write(ctx, id, doing, true, func(tx pgx.Tx, w writeState) error {
		if err := s.allows(ctx, id, w); err != nil {
			return err
		}
		// the last of one call's results in one Keep wins, as a later Keep's does
		_, err := tx.Exec(ctx, `INSERT INTO kept (conversation, call_id, part)
			SELECT DISTINCT ON (call_id) $1, call_id, part FROM unnest($2::bytea[], $3::bytea[]) WITH ORDINALITY AS k(call_id, part, i) ORDER BY call_id, i DESC
			ON CONFLICT (conversation, call_id) DO UPDATE SET part = excluded.part`, id, calls, raws)
		if err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
}

// Kept returns the results kept for conversation id (see
// history.Store.Kept), by call id.
func (s *Store) Kept(ctx context.Context, id string) ([]history.Part, error) {
	doing := "reading the kept results of conversation " + id
	rows, err := s.pool.Query(ctx, `SELECT call_id, part FROM kept WHERE conversation = $1 ORDER BY call_id`, id)
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer rows.Close()
	var out []history.Part
	for rows.Next() {
		var callID, raw []byte
		if err := rows.Scan(&callID, &raw); err != nil {
			return nil, s.explain(doing, err)
		}
		p, err := history.DecodePart(raw)
		if err != nil {
			return nil, fmt.Errorf("history store %s: conversation %s, the kept result of call %s is not valid: %w", s.name, id, callID, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain(doing, err)
	}
	return out, nil
}
