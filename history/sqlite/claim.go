package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/result"
)

// claimRow is a stored claim: its holder, and when its lease runs out.
type claimRow struct {
	history.Holder
	expires time.Time
}

// alive reports whether the claim's holder may still be writing at now
// (record.Alive); node is this process's (record.ThisNode).
func (c claimRow) alive(now time.Time, node string) bool {
	return record.Alive(now, c.expires, node, c.Node, c.PID)
}

// lost is the error for a write by w when the conversation's claim is c
// (ok false: there is none).
func lost(id string, w history.Holder, c claimRow, ok bool) error {
	if !ok {
		return record.ClaimLost(id, w.String(), "")
	}
	return record.ClaimLost(id, w.String(), c.Holder.String())
}

// readClaim reads conversation id's claim in tx; ok is false when there is
// none.
func (s *Store) readClaim(ctx context.Context, tx *sql.Tx, id string) (c claimRow, ok bool, err error) {
	var since, expires int64
	err = tx.StmtContext(ctx, s.selectClaim).QueryRowContext(ctx, id).Scan(&c.Token, &c.PID, &c.Host, &c.Node, &since, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, s.explain("reading the claim on conversation "+id, err)
	}
	c.Since, c.expires = time.Unix(0, since).UTC(), time.Unix(0, expires).UTC()
	return c, true, nil
}

// nullClaim is a claim as read beside another row (LEFT JOIN claims): all
// NULL when the conversation has none.
type nullClaim struct {
	token, host, node   sql.NullString
	pid, since, expires sql.NullInt64
}

// row returns the claim read; ok is false when there is none.
func (n nullClaim) row() (c claimRow, ok bool) {
	if !n.token.Valid {
		return c, false
	}
	c.Token, c.PID, c.Host, c.Node = n.token.String, int(n.pid.Int64), n.host.String, n.node.String
	c.Since, c.expires = time.Unix(0, n.since.Int64).UTC(), time.Unix(0, n.expires.Int64).UTC()
	return c, true
}

// checkClaim is the check of every write to conversation id, in the
// write's transaction: under Writing(ctx, w), w must hold the claim;
// without, no live holder may have it.
func (s *Store) checkClaim(ctx context.Context, tx *sql.Tx, id string) error {
	c, ok, err := s.readClaim(ctx, tx, id)
	if err != nil {
		return err
	}
	return s.claimAllows(ctx, id, c, ok)
}

// claimAllows is checkClaim's judgement of the claim c read in the write's
// transaction (ok false: there is none).
func (s *Store) claimAllows(ctx context.Context, id string, c claimRow, ok bool) error {
	if w, writing := history.WriterOf(ctx); writing {
		if !ok || c.Token != w.Token {
			return lost(id, w, c, ok)
		}
		return nil
	}
	if ok && c.alive(s.now(), s.node) {
		return &history.HeldError{Conversation: id, Holder: c.Holder, Expires: c.expires}
	}
	return nil
}

// Claim takes conversation id's claim for h (see Store.Claim).
func (s *Store) Claim(ctx context.Context, id string, h history.Holder, lease time.Duration) (history.Holder, error) {
	if err := record.CheckClaim(id, h.Token, lease); err != nil {
		return h, err
	}
	doing := "claiming conversation " + id
	// A claim need not wait for the disk: after a crash of the machine its
	// holder is gone anyway.
	err := s.write(ctx, doing, true, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversations WHERE id = ?`, id).Scan(&exists); err != nil {
			return s.explain(doing, err)
		}
		if exists == 0 {
			return fmt.Errorf("conversation %s: %w", id, history.ErrNotFound)
		}
		c, ok, err := s.readClaim(ctx, tx, id)
		if err != nil {
			return err
		}
		now := s.now()
		switch {
		case ok && c.Token == h.Token:
			h.Since = c.Since
		case ok && c.alive(now, s.node):
			return &history.HeldError{Conversation: id, Holder: c.Holder, Expires: c.expires}
		default:
			h.Since = now.UTC()
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO claims (conversation, token, pid, host, node, since, expires) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, h.Token, h.PID, h.Host, h.Node, h.Since.UnixNano(), now.Add(lease).UnixNano())
		return s.wrapErr(doing, err)
	})
	return h, err
}

// Renew extends h's claim on id (see Store.Renew).
func (s *Store) Renew(ctx context.Context, id string, h history.Holder, lease time.Duration) error {
	if err := record.CheckLease(id, lease); err != nil {
		return err
	}
	doing := "renewing the claim on conversation " + id
	return s.write(ctx, doing, true, func(tx *sql.Tx) error {
		c, ok, err := s.readClaim(ctx, tx, id)
		if err != nil {
			return err
		}
		if !ok || c.Token != h.Token {
			return lost(id, h, c, ok)
		}
		_, err = tx.ExecContext(ctx, `UPDATE claims SET expires = ? WHERE conversation = ? AND token = ?`,
			s.now().Add(lease).UnixNano(), id, h.Token)
		return s.wrapErr(doing, err)
	})
}

// Release gives up h's claim on id (see Store.Release).
func (s *Store) Release(ctx context.Context, id string, h history.Holder) error {
	doing := "releasing the claim on conversation " + id
	return s.write(ctx, doing, true, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE conversation = ? AND token = ?`, id, h.Token)
		return s.wrapErr(doing, err)
	})
}

// Keep stores finished calls' results in one transaction, without waiting
// for the disk (see Store.Keep).
func (s *Store) Keep(ctx context.Context, id string, results ...history.Part) error {
	if len(results) == 0 {
		return nil
	}
	raws := make([][]byte, len(results))
	for i, p := range results {
		if err := record.CheckKept(id, p.Type == history.ToolResultPart, string(p.Type), p.CallID); err != nil {
			return err
		}
		raw, err := result.JSON(p)
		if err != nil {
			return fmt.Errorf("keeping the result of call %s in conversation %s: %w", p.CallID, id, err)
		}
		raws[i] = raw
	}
	doing := "keeping finished calls' results in conversation " + id
	return s.rawWriteAnd(ctx, doing, true, func(tx rawTx) error {
		var cl nullClaim
		err := tx.queryRow(tx.st.selectClaim, []any{id}, &cl.token, &cl.pid, &cl.host, &cl.node, &cl.since, &cl.expires)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s.explain("reading the claim on conversation "+id, err)
		}
		c, ok := cl.row()
		if err := s.claimAllows(ctx, id, c, ok); err != nil {
			return err
		}
		for i, p := range results {
			err := tx.exec(tx.st.insertKept, id, p.CallID, raws[i])
			if isForeignKey(err) {
				return fmt.Errorf("conversation %s: %w", id, history.ErrNotFound)
			}
			if err != nil {
				return s.explain(doing, err)
			}
		}
		return nil
	}, nil)
}

// Kept returns the results kept for id (see Store.Kept).
func (s *Store) Kept(ctx context.Context, id string) ([]history.Part, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT call_id, part FROM kept WHERE conversation = ? ORDER BY call_id`, id)
	if err != nil {
		return nil, s.explain("reading the kept results of conversation "+id, err)
	}
	defer rows.Close()
	var out []history.Part
	for rows.Next() {
		var callID string
		var raw []byte
		if err := rows.Scan(&callID, &raw); err != nil {
			return nil, s.explain("reading the kept results of conversation "+id, err)
		}
		part, err := history.DecodePart(raw)
		if err != nil {
			return nil, fmt.Errorf("history store %s: conversation %s, the kept result of call %s is not valid: %w", s.path, id, callID, err)
		}
		out = append(out, part)
	}
	return out, s.wrapErr("reading the kept results of conversation "+id, rows.Err())
}
