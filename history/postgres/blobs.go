package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// The store keeps the bytes of conversations' workspace files
// (history.Blobs) in two tables of layout 2: blobs, each content once by
// its hash, and blob_files, the hash each conversation's path names. It
// is shared by every host on the database, so the agent keeps its files
// there and a conversation continued on another host reads them.

var (
	_ history.Blobs  = (*Store)(nil)
	_ history.Family = (*Store)(nil)
)

// Shared reports true: the database is shared by hosts that do not share
// their workspaces (see history.Blobs).
func (s *Store) Shared() bool { return true }

// PutBlob keeps data as the file at path of conversation id (see
// history.Blobs), in one transaction committed (to the server's disk)
// before it returns. Bytes already kept, under this path or another, are
// not sent again. Two hosts keeping the same bytes at one path at once
// both succeed; other bytes at a kept path are refused, saying so.
func (s *Store) PutBlob(ctx context.Context, id, path string, data []byte) (string, error) {
	doing := "keeping file " + path + " of conversation " + id
	if err := record.CheckBlob(doing, id, path, len(data)); err != nil {
		return "", err
	}
	hash := history.BlobHash(data)
	if data == nil {
		data = []byte{} // an empty file, not SQL NULL
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return "", s.explain(doing, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// what the path names already, and whether the bytes are kept: a
	// no-op, a refusal or a file of known bytes sends no data
	var have *string
	var known bool
	err = tx.QueryRow(ctx, `SELECT (SELECT hash FROM blob_files WHERE conversation = $1 AND path = $2),
		EXISTS (SELECT 1 FROM blobs WHERE hash = $3)`, id, []byte(path), hash).Scan(&have, &known)
	if err != nil {
		return "", s.explain(doing, err)
	}
	if have != nil {
		return hash, s.sameBlob(id, path, *have, hash)
	}
	if !known {
		// a host keeping the same bytes at once waits here for the
		// other's commit, then inserts nothing
		if _, err := tx.Exec(ctx, `INSERT INTO blobs (hash, data) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, hash, data); err != nil {
			return "", s.explain(doing, err)
		}
	}
	tag, err := tx.Exec(ctx, `INSERT INTO blob_files (conversation, path, hash) VALUES ($1, $2, $3) ON CONFLICT (conversation, path) DO NOTHING`, id, []byte(path), hash)
	if isCode(err, "23503") { // foreign_key_violation: no such conversation (blobs' is inserted above)
		return "", record.NotFound(id)
	}
	if err != nil {
		return "", s.explain(doing, err)
	}
	if tag.RowsAffected() == 0 {
		// another host kept the path between the read above and the
		// insert, and committed: its bytes decide, read in a statement
		// that starts after its commit
		var other string
		if err := tx.QueryRow(ctx, `SELECT hash FROM blob_files WHERE conversation = $1 AND path = $2`, id, []byte(path)).Scan(&other); err != nil {
			return "", s.explain(doing, err)
		}
		if err := s.sameBlob(id, path, other, hash); err != nil {
			return "", err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return "", s.explain("committing: "+doing, err)
	}
	return hash, nil
}

// sameBlob is nil when path of conversation id is kept with the bytes of
// hash want (have), else the error wrapping history.ErrBlobTaken.
func (s *Store) sameBlob(id, path, have, want string) error {
	if have == want {
		return nil
	}
	return fmt.Errorf("history store %s: keeping file %s of conversation %s: it is kept with other bytes (sha256 %s), not these (sha256 %s): %w",
		s.name, path, id, short12(have), short12(want), history.ErrBlobTaken)
}

// BlobAt returns the bytes kept as the file at path of conversation id
// and their hash as stored (see history.Blobs): a fork or branch that
// keeps none at path reads the file of the conversation whose messages it
// shares, and so on up. The bytes are the caller's.
func (s *Store) BlobAt(ctx context.Context, id, path string) (string, []byte, error) {
	for cur, depth := id, 0; ; depth++ {
		var hash *string
		var data []byte
		var base string
		err := s.pool.QueryRow(ctx, `SELECT f.hash, b.data, c.base FROM conversations c
			LEFT JOIN blob_files f ON f.conversation = c.id AND f.path = $2
			LEFT JOIN blobs b ON b.hash = f.hash
			WHERE c.id = $1`, cur, []byte(path)).Scan(&hash, &data, &base)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && cur == id:
			return "", nil, record.NotFound(id)
		case errors.Is(err, pgx.ErrNoRows):
			return "", nil, fmt.Errorf("history store %s: reading file %s of conversation %s: it shares messages with conversation %s, which is not in the store: %w", s.name, path, id, cur, history.ErrDamaged)
		case err != nil:
			return "", nil, s.explain("reading file "+path+" of conversation "+id, err)
		case hash == nil && base != "" && depth < maxChain:
			cur = base
			continue
		case hash == nil:
			return "", nil, fmt.Errorf("conversation %s keeps no file %s: %w", id, path, history.ErrNotFound)
		case data == nil: // blob_files' foreign key keeps this from happening
			return "", nil, fmt.Errorf("history store %s: file %s of conversation %s names bytes (sha256 %s) the store does not hold: %w", s.name, path, cur, short12(*hash), history.ErrDamaged)
		}
		return *hash, data, nil
	}
}

// BlobByHash returns the bytes whose hash is hash, whatever path and
// conversation keep them (see history.Blobs). The bytes are the caller's.
func (s *Store) BlobByHash(ctx context.Context, hash string) ([]byte, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM blobs WHERE hash = $1`, hash).Scan(&data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("no kept file has sha256 %s: %w", hash, history.ErrNotFound)
	case err != nil:
		return nil, s.explain("reading the file of sha256 "+short12(hash), err)
	}
	return data, nil
}

// short12 is the first 12 digits of a hash, as errors show it.
func short12(hash string) string {
	return hash[:min(12, len(hash))]
}
