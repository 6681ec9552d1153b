package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/myelin-run/myelin/history"
)

// resumeSchema is the tables of the resume points (history.Resumes), made
// on the first point kept, so that a store made before them opens as it
// was (its layout does not change: a store without them has no points,
// and its agents take the slow path). A point's bytes are kept in
// chunks, each written once: a conversation's kept prefix grows by
// appending, so keeping the next point writes only what it adds. Each
// chunk carries its CRC-32C, checked as it is read back.
const resumeSchema = `CREATE TABLE IF NOT EXISTS resume_points (
	conversation TEXT PRIMARY KEY,
	meta TEXT NOT NULL -- the ResumePoint, its bytes left out, and their size
);
CREATE TABLE IF NOT EXISTS resume_chunks (
	conversation TEXT NOT NULL,
	start INTEGER NOT NULL, -- where its bytes begin in the point's
	crc   INTEGER NOT NULL, -- CRC-32C of its bytes
	bytes BLOB NOT NULL,
	PRIMARY KEY (conversation, start)
)`

// maxResumeChunks bounds a point's chunks: past it the point is written
// again as one, so that reading it back stays a few rows.
const maxResumeChunks = 64

var resumeCRC = crc32.MakeTable(crc32.Castagnoli)

// resumeMeta is a point's row: the point without its bytes, and their size.
type resumeMeta struct {
	history.ResumePoint
	Size int `json:"size"`
}

// KeepResume keeps p as conversation id's resume point (history.Resumes),
// without waiting for the disk. The chunks of the point before that p's
// bytes still hold stay; the rest go, and what follows them is written as
// one new chunk.
func (s *Store) KeepResume(ctx context.Context, id string, p history.ResumePoint) error {
	doing := "keeping the resume point of conversation " + id
	meta, err := json.Marshal(resumeMeta{ResumePoint: p, Size: len(p.Bytes)})
	if err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	return s.write(ctx, doing, true, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, resumeSchema); err != nil {
			return s.explain(doing, err)
		}
		held, chunks, err := s.heldChunks(ctx, tx, id, p.Bytes)
		if err != nil {
			return s.explain(doing, err)
		}
		if chunks >= maxResumeChunks {
			held = 0 // written again whole
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM resume_chunks WHERE conversation = ? AND start >= ?`, id, held); err != nil {
			return s.explain(doing, err)
		}
		if rest := p.Bytes[held:]; len(rest) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO resume_chunks (conversation, start, crc, bytes) VALUES (?, ?, ?, ?)`,
				id, held, int64(crc32.Checksum(rest, resumeCRC)), rest); err != nil {
				return s.explain(doing, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO resume_points (conversation, meta) VALUES (?, ?)
			ON CONFLICT (conversation) DO UPDATE SET meta = excluded.meta`, id, string(meta)); err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
}

// heldChunks is how many of b's first bytes the kept chunks of
// conversation id hold as they are (the end of the last of the first
// chunks whose bytes b has at their place), and how many chunks those are.
func (s *Store) heldChunks(ctx context.Context, tx *sql.Tx, id string, b []byte) (held, chunks int, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT start, crc, length(bytes) FROM resume_chunks WHERE conversation = ? ORDER BY start`, id)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var start, size int
		var crc int64
		if err := rows.Scan(&start, &crc, &size); err != nil {
			return 0, 0, err
		}
		if start != held || start+size > len(b) || int64(crc32.Checksum(b[start:start+size], resumeCRC)) != crc {
			break
		}
		held, chunks = start+size, chunks+1
	}
	return held, chunks, rows.Err()
}

// ResumeOf returns conversation id's resume point (history.Resumes), its
// chunks checked against their CRC-32C and against each other (each
// begins where the one before it ends, and they make the point's size).
func (s *Store) ResumeOf(ctx context.Context, id string) (history.ResumePoint, error) {
	doing := "reading the resume point of conversation " + id
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return history.ResumePoint{}, s.explain(doing, err)
	}
	defer tx.Rollback()
	var raw string
	err = tx.QueryRowContext(ctx, `SELECT meta FROM resume_points WHERE conversation = ?`, id).Scan(&raw)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err != nil && noSuchTable(err)):
		return history.ResumePoint{}, fmt.Errorf("conversation %s has no resume point: %w", id, history.ErrNotFound)
	case err != nil:
		return history.ResumePoint{}, s.explain(doing, err)
	}
	var meta resumeMeta
	if err := json.Unmarshal([]byte(raw), &meta); err != nil {
		return history.ResumePoint{}, fmt.Errorf("%s: its record does not read (%v): %w", doing, err, history.ErrNotFound)
	}
	rows, err := tx.QueryContext(ctx, `SELECT start, crc, bytes FROM resume_chunks WHERE conversation = ? ORDER BY start`, id)
	if err != nil {
		return history.ResumePoint{}, s.explain(doing, err)
	}
	defer rows.Close()
	// room to grow by half: a wire builds the next body in place, after
	// the bytes, as it does on its own kept bodies (prefix.Cache.Buffer)
	b := make([]byte, 0, meta.Size+meta.Size/2+4096)
	for rows.Next() {
		var start int
		var crc int64
		var chunk sql.RawBytes
		if err := rows.Scan(&start, &crc, &chunk); err != nil {
			return history.ResumePoint{}, s.explain(doing, err)
		}
		if start != len(b) || len(b)+len(chunk) > meta.Size || int64(crc32.Checksum(chunk, resumeCRC)) != crc {
			return history.ResumePoint{}, fmt.Errorf("%s: its bytes at %d do not read back as kept: %w", doing, start, history.ErrNotFound)
		}
		b = append(b, chunk...)
	}
	if err := rows.Err(); err != nil {
		return history.ResumePoint{}, s.explain(doing, err)
	}
	if len(b) != meta.Size {
		return history.ResumePoint{}, fmt.Errorf("%s: %d of its %d bytes read back: %w", doing, len(b), meta.Size, history.ErrNotFound)
	}
	p := meta.ResumePoint
	p.Bytes = b
	return p, nil
}
