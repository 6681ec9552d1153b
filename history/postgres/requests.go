package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// storedMeta is a request's meta as AddRequest stores it: the
// SentRequest (its body left out) and Row, a random nonce of the row
// (record.SentBodies). A reader unmarshals it into a SentRequest, which
// has no Row.
type storedMeta struct {
	history.SentRequest
	Row uint64 `json:"row"`
}

// AddRequest keeps r as conversation id's next request (see
// history.Requests), under the conversation's row lock, without waiting
// for the server's disk. The newest row is read under that lock, in the
// insert's transaction: the remembered body is used only when that row is
// the one this store wrote (record.SentBodies).
func (s *Store) AddRequest(ctx context.Context, id string, r history.SentRequest) (int, error) {
	doing := "keeping a request of conversation " + id
	if r.Time.IsZero() {
		r.Time = s.hostNow()
	}
	var n int
	var meta string // the request's as stored
	err := s.write(ctx, id, doing, true, func(tx pgx.Tx, _ writeState) error {
		// the newest request stored, and its meta (none: 0, "")
		var lastMeta string
		n = 0
		err := tx.QueryRow(ctx, `SELECT n, meta FROM requests WHERE conversation = $1 ORDER BY n DESC LIMIT 1`, id).Scan(&n, &lastMeta)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return s.explain(doing, err)
		}
		n++
		r.N, r.Size = n, len(r.Body)
		base, prefix := 0, 0
		if n > 1 && (n-1)%record.SnapshotEvery != 0 {
			prev, ok := s.sent.Last(id, n-1, lastMeta)
			if !ok {
				last, err := s.request(ctx, tx, id, n-1)
				if err != nil {
					return err
				}
				prev = last.Body
			}
			if p := history.CommonPrefix(prev, r.Body); p > 0 {
				base, prefix = n-1, p
			}
		}
		m, err := json.Marshal(storedMeta{SentRequest: r, Row: rand.Uint64()})
		if err != nil {
			return fmt.Errorf("%s: %w", doing, err)
		}
		meta = string(m)
		if _, err := tx.Exec(ctx, `INSERT INTO requests (conversation, n, base, prefix, tail, meta) VALUES ($1, $2, $3, $4, $5, $6)`,
			id, n, base, prefix, r.Body[prefix:], meta); err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
	if err != nil {
		s.sent.Forget(id)
		return 0, err
	}
	s.sent.Remember(id, n, meta, r.Body)
	return n, nil
}

// Request returns conversation id's n-th request, its body rebuilt from
// the whole one at or before it (see history.Requests).
func (s *Store) Request(ctx context.Context, id string, n int) (history.SentRequest, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return history.SentRequest{}, err
	}
	var out history.SentRequest
	err := s.reading(ctx, "reading a request of conversation "+id, func(tx pgx.Tx) error {
		var err error
		out, err = s.request(ctx, tx, id, n)
		return err
	})
	return out, err
}

// reading runs fn in a read-only transaction that sees one snapshot.
func (s *Store) reading(ctx context.Context, doing string, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.explain(doing, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *Store) request(ctx context.Context, tx pgx.Tx, id string, n int) (history.SentRequest, error) {
	doing := fmt.Sprintf("reading request %d of conversation %s", n, id)
	var count, from int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(max(n), 0), COALESCE(max(n) FILTER (WHERE base = 0 AND n <= $2), 1) FROM requests WHERE conversation = $1`, id, n).Scan(&count, &from); err != nil {
		return history.SentRequest{}, s.explain(doing, err)
	}
	if n < 1 || n > count {
		return history.SentRequest{}, record.NoRequest(id, n, count)
	}
	rows, err := tx.Query(ctx, `SELECT n, base, prefix, tail, meta FROM requests WHERE conversation = $1 AND n BETWEEN $2 AND $3 ORDER BY n`, id, from, n)
	if err != nil {
		return history.SentRequest{}, s.explain(doing, err)
	}
	defer rows.Close()
	chain := record.NewRequestRows(from, n)
	for rows.Next() {
		var rn, base, prefix int
		var tail []byte
		var meta string
		if err := rows.Scan(&rn, &base, &prefix, &tail, &meta); err != nil {
			return history.SentRequest{}, s.explain(doing, err)
		}
		if err := chain.Add(rn, base, prefix, tail, meta); err != nil {
			return history.SentRequest{}, fmt.Errorf("history store %s: %s: %v: %w", s.name, doing, err, history.ErrDamaged)
		}
	}
	if err := rows.Err(); err != nil {
		return history.SentRequest{}, s.explain(doing, err)
	}
	body, meta, err := chain.Done()
	if err != nil {
		return history.SentRequest{}, fmt.Errorf("history store %s: %s: %v: %w", s.name, doing, err, history.ErrDamaged)
	}
	var out history.SentRequest
	if err := json.Unmarshal([]byte(meta), &out); err != nil {
		return history.SentRequest{}, fmt.Errorf("history store %s: %s: %v: %w", s.name, doing, err, history.ErrDamaged)
	}
	out.N, out.Body = n, body
	if out.Body == nil {
		out.Body = []byte{}
	}
	return out, nil
}

// RequestCount is how many requests conversation id has (see
// history.Requests).
func (s *Store) RequestCount(ctx context.Context, id string) (int, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return 0, err
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(max(n), 0) FROM requests WHERE conversation = $1`, id).Scan(&n); err != nil {
		return 0, s.explain("counting the requests of conversation "+id, err)
	}
	return n, nil
}

// RequestList returns conversation id's requests without their bodies
// (see history.Requests).
func (s *Store) RequestList(ctx context.Context, id string) ([]history.SentRequest, error) {
	doing := "listing the requests of conversation " + id
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT n, meta FROM requests WHERE conversation = $1 ORDER BY n`, id)
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer rows.Close()
	out := []history.SentRequest{}
	for rows.Next() {
		var n int
		var meta string
		if err := rows.Scan(&n, &meta); err != nil {
			return nil, s.explain(doing, err)
		}
		var r history.SentRequest
		if err := json.Unmarshal([]byte(meta), &r); err != nil {
			return nil, fmt.Errorf("history store %s: %s: request %d: %v: %w", s.name, doing, n, err, history.ErrDamaged)
		}
		r.N = n
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain(doing, err)
	}
	return out, nil
}
