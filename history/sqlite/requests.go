package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// requestsSchema is the table of the requests sent. It is made on the
// first request kept, so that a store made before it opens as it was.
// A row keeps its body whole (base 0) every record.SnapshotEvery requests and
// whenever it shares no byte with the one before; else base is n-1,
// prefix how many bytes it shares with it, and tail the rest.
const requestsSchema = `CREATE TABLE IF NOT EXISTS requests (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	n      INTEGER NOT NULL,
	base   INTEGER NOT NULL,
	prefix INTEGER NOT NULL,
	tail   BLOB NOT NULL,
	meta   TEXT NOT NULL, -- the SentRequest, its body left out
	PRIMARY KEY (conversation, n)
)`

// sentCache is what the store remembers of the requests it kept: the
// newest body of some conversations (record.SentBodies), and whether the
// requests table is known to be there.
type sentCache struct {
	record.SentBodies
	table atomic.Bool // the requests table is known to exist: not made again
}

// storedMeta is a request's meta as AddRequest stores it: the
// SentRequest (its body left out) and Row, a random nonce of the row
// (record.SentBodies). A reader unmarshals it into a SentRequest, which
// has no Row.
type storedMeta struct {
	history.SentRequest
	Row uint64 `json:"row"`
}

// AddRequest keeps r as conversation id's next request (see Requests),
// without waiting for the disk.
func (s *Store) AddRequest(ctx context.Context, id string, r history.SentRequest) (int, error) {
	doing := "keeping a request of conversation " + id
	if r.Time.IsZero() {
		r.Time = s.now().UTC()
	}
	var n int
	var meta string // the request's as stored
	err := s.write(ctx, doing, true, func(tx *sql.Tx) error {
		if !s.sent.table.Load() {
			if _, err := tx.ExecContext(ctx, requestsSchema); err != nil {
				return s.explain(doing, err)
			}
		}
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversations WHERE id = ?`, id).Scan(&exists); err != nil {
			return s.explain(doing, err)
		}
		if exists == 0 {
			return fmt.Errorf("conversation %s: %w", id, history.ErrNotFound)
		}
		// the newest request stored, and its meta (none: 0, "")
		var lastMeta string
		n = 0
		err := tx.QueryRowContext(ctx, `SELECT n, meta FROM requests WHERE conversation = ? ORDER BY n DESC LIMIT 1`, id).Scan(&n, &lastMeta)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s.explain(doing, err)
		}
		n++
		r.N = n
		base, prefix := 0, 0
		last, ok := s.sent.Last(id, n-1, lastMeta) // else another's, or none
		if ok && (n-1)%record.SnapshotEvery != 0 {
			if p := history.CommonPrefix(last, r.Body); p > 0 {
				base, prefix = n-1, p
			}
		} else if !ok && n > 1 && (n-1)%record.SnapshotEvery != 0 {
			prev, err := s.request(ctx, tx, id, n-1)
			if err != nil {
				return err
			}
			if p := history.CommonPrefix(prev.Body, r.Body); p > 0 {
				base, prefix = n-1, p
			}
		}
		r.Size = len(r.Body)
		m, err := json.Marshal(storedMeta{SentRequest: r, Row: rand.Uint64()})
		if err != nil {
			return fmt.Errorf("%s: %w", doing, err)
		}
		meta = string(m)
		if _, err := tx.ExecContext(ctx, `INSERT INTO requests (conversation, n, base, prefix, tail, meta) VALUES (?, ?, ?, ?, ?, ?)`,
			id, n, base, prefix, r.Body[prefix:], meta); err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
	if err != nil {
		s.sent.Forget(id)
		return 0, err
	}
	s.sent.table.Store(true)
	s.sent.Remember(id, n, meta, r.Body)
	return n, nil
}

// Request returns conversation id's n-th request, its body rebuilt from
// the whole one before it (see Requests).
func (s *Store) Request(ctx context.Context, id string, n int) (history.SentRequest, error) {
	tx, err := s.readDB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return history.SentRequest{}, s.explain("reading a request of conversation "+id, err)
	}
	defer tx.Rollback()
	if _, err := s.getIn(ctx, tx, id, recordColumns); err != nil {
		return history.SentRequest{}, err
	}
	return s.request(ctx, tx, id, n)
}

func (s *Store) request(ctx context.Context, tx *sql.Tx, id string, n int) (history.SentRequest, error) {
	doing := fmt.Sprintf("reading request %d of conversation %s", n, id)
	count, err := s.requestCount(ctx, tx, id)
	if err != nil {
		return history.SentRequest{}, err
	}
	if n < 1 || n > count {
		return history.SentRequest{}, record.NoRequest(id, n, count)
	}
	// the rows from the last whole body at or before n
	var from int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(n), 1) FROM requests WHERE conversation = ? AND n <= ? AND base = 0`, id, n).Scan(&from); err != nil {
		return history.SentRequest{}, s.explain(doing, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT n, base, prefix, tail, meta FROM requests WHERE conversation = ? AND n BETWEEN ? AND ? ORDER BY n`, id, from, n)
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
			return history.SentRequest{}, fmt.Errorf("history store %s: %s: %v: %w", s.path, doing, err, history.ErrDamaged)
		}
	}
	if err := rows.Err(); err != nil {
		return history.SentRequest{}, s.explain(doing, err)
	}
	body, meta, err := chain.Done()
	if err != nil {
		return history.SentRequest{}, fmt.Errorf("history store %s: %s: %v: %w", s.path, doing, err, history.ErrDamaged)
	}
	var out history.SentRequest
	if err := json.Unmarshal([]byte(meta), &out); err != nil {
		return history.SentRequest{}, fmt.Errorf("history store %s: %s: %v: %w", s.path, doing, err, history.ErrDamaged)
	}
	out.N, out.Body = n, body
	return out, nil
}

// RequestCount is how many requests conversation id has (see Requests).
func (s *Store) RequestCount(ctx context.Context, id string) (int, error) {
	tx, err := s.readDB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, s.explain("counting the requests of conversation "+id, err)
	}
	defer tx.Rollback()
	if _, err := s.getIn(ctx, tx, id, recordColumns); err != nil {
		return 0, err
	}
	return s.requestCount(ctx, tx, id)
}

func (s *Store) requestCount(ctx context.Context, tx *sql.Tx, id string) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(n), 0) FROM requests WHERE conversation = ?`, id).Scan(&n)
	if noSuchTable(err) {
		return 0, nil // a store that never kept a request
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, s.explain("counting the requests of conversation "+id, err)
	}
	return n, nil
}

// RequestList returns conversation id's requests without their bodies
// (see Requests): their rows' few fields, not their tails.
func (s *Store) RequestList(ctx context.Context, id string) ([]history.SentRequest, error) {
	doing := "listing the requests of conversation " + id
	tx, err := s.readDB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer tx.Rollback()
	if _, err := s.getIn(ctx, tx, id, recordColumns); err != nil {
		return nil, err
	}
	if n, err := s.requestCount(ctx, tx, id); err != nil || n == 0 {
		return []history.SentRequest{}, err // a store that never kept a request has no table
	}
	rows, err := tx.QueryContext(ctx, `SELECT n, meta FROM requests WHERE conversation = ? ORDER BY n`, id)
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer rows.Close()
	var out []history.SentRequest
	for rows.Next() {
		var n int
		var meta string
		if err := rows.Scan(&n, &meta); err != nil {
			return nil, s.explain(doing, err)
		}
		var r history.SentRequest
		if err := json.Unmarshal([]byte(meta), &r); err != nil {
			return nil, fmt.Errorf("history store %s: %s: request %d: %v: %w", s.path, doing, n, err, history.ErrDamaged)
		}
		r.N = n
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain(doing, err)
	}
	return out, nil
}
