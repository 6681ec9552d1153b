package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// sentBodiesKept bounds how many conversations' newest request bodies the
// store remembers, so that the next request is kept by what it adds
// without reading the last back; one it forgot is read back.
const sentBodiesKept = 64

// sentCache remembers the newest request body this process kept for some
// conversations.
type sentCache struct {
	mu     sync.Mutex
	bodies map[string]sentBody
}

// sentBody is a conversation's newest request as this store kept it: its
// number, body, and its row's meta as stored, which tells it from a
// request another opening kept under the same number after deleting the
// conversation and making it again under its id: meta holds a nonce of
// the row's own (storedMeta.Row), so the body is taken as the stored
// one's only while the newest row's number and meta are these. The
// number alone did not tell them apart, nor would the request's fields:
// a caller may give the Time (history.SentRequest.Time), and two requests
// of the same time, answer, wire and size with other bodies had the same
// meta (TestARequestKeptByAnotherOpeningWithTheSameFieldsIsNotTakenForOurs).
// A row of an older build has no nonce and never matches: its body is
// read back.
type sentBody struct {
	n    int
	meta string
	body []byte
}

// storedMeta is a request's meta as AddRequest stores it: the
// SentRequest (its body left out) and Row, a random nonce of the row
// (sentBody). A reader unmarshals it into a SentRequest, which has no Row.
type storedMeta struct {
	history.SentRequest
	Row uint64 `json:"row"`
}

// last returns the body of conversation id's request n, when it is the
// one remembered and its row's meta as stored is meta.
func (c *sentCache) last(id string, n int, meta string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.bodies[id]
	return b.body, ok && b.n == n && b.meta == meta
}

// remember keeps body as conversation id's request n, its row's meta as
// stored being meta (body nil: forgets id).
func (c *sentCache) remember(id string, n int, meta string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if body == nil {
		delete(c.bodies, id)
		return
	}
	if c.bodies == nil {
		c.bodies = map[string]sentBody{}
	}
	if _, ok := c.bodies[id]; !ok && len(c.bodies) >= sentBodiesKept {
		for other := range c.bodies { // forget one, any: it is read back if needed
			delete(c.bodies, other)
			break
		}
	}
	c.bodies[id] = sentBody{n: n, meta: meta, body: append([]byte(nil), body...)}
}

// AddRequest keeps r as conversation id's next request (see
// history.Requests), under the conversation's row lock, without waiting
// for the server's disk. The newest row is read under that lock, in the
// insert's transaction: the remembered body is used only when that row is
// the one this store wrote (sentBody).
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
			prev, ok := s.sent.last(id, n-1, lastMeta)
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
		s.sent.remember(id, 0, "", nil)
		return 0, err
	}
	s.sent.remember(id, n, meta, r.Body)
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
