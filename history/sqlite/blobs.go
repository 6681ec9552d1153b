package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// blobsSchema is the tables of Blobs: each content once, by hash, and the
// hash each conversation's path names. They are made on the first file
// kept, so that a store made before them opens as it was; a store that
// never kept one has no such tables, and reading finds nothing.
const blobsSchema = `
CREATE TABLE IF NOT EXISTS blobs (
	hash TEXT PRIMARY KEY, -- BlobHash(data)
	data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS blob_files (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	path TEXT NOT NULL,
	hash TEXT NOT NULL REFERENCES blobs(hash),
	PRIMARY KEY (conversation, path)
)`

// Shared reports false: a SQLite store is a file on one host, by default
// inside the workspace, so the agent keeps no files' bytes in it (see
// Blobs). Its PutBlob works all the same, for a caller that asks.
func (s *Store) Shared() bool { return false }

// PutBlob keeps data as the file at path of conversation id (see Blobs),
// synced to the disk before it returns.
func (s *Store) PutBlob(ctx context.Context, id, path string, data []byte) (string, error) {
	doing := "keeping file " + path + " of conversation " + id
	if err := record.CheckBlob(doing, id, path, len(data)); err != nil {
		return "", err
	}
	hash := history.BlobHash(data)
	err := s.write(ctx, doing, false, func(tx *sql.Tx) error {
		// Made here, not at open: blobs are rare (spills of a shared
		// store), and a store that never keeps one stays as it was.
		if _, err := tx.ExecContext(ctx, blobsSchema); err != nil {
			return s.explain(doing, err)
		}
		var have string
		err := tx.QueryRowContext(ctx, `SELECT hash FROM blob_files WHERE conversation = ? AND path = ?`, id, path).Scan(&have)
		switch {
		case err == nil && have == hash:
			return nil
		case err == nil:
			return record.BlobTaken(id, path, have, hash)
		case !errors.Is(err, sql.ErrNoRows):
			return s.explain(doing, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO blobs (hash, data) VALUES (?, ?)`, hash, nonNil(data)); err != nil {
			return s.explain(doing, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO blob_files (conversation, path, hash) VALUES (?, ?, ?)`, id, path, hash)
		if isForeignKey(err) { // no such conversation: the blob inserted above is rolled back
			return fmt.Errorf("conversation %s: %w", id, history.ErrNotFound)
		}
		return s.wrapErr(doing, err)
	})
	if err != nil {
		return "", err
	}
	return hash, nil
}

// BlobAt returns the bytes kept as the file at path of conversation id
// (see Blobs). A fork (or branch) reads the files of the conversations
// whose messages it shares, down its bases, where it keeps none of its
// own at path: their results name them.
func (s *Store) BlobAt(ctx context.Context, id, path string) (string, []byte, error) {
	doing := "reading file " + path + " of conversation " + id
	// the records down the chain and the files in one read transaction:
	// a base rewound, switched or made again between them is not glued
	// to the link that named it
	tx, err := s.readDB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return "", nil, s.explain(doing, err)
	}
	defer tx.Rollback()
	c, err := s.getIn(ctx, tx, id, recordColumns)
	if err != nil {
		return "", nil, err
	}
	for depth := 0; ; depth++ {
		var hash string
		var data []byte
		err := tx.QueryRowContext(ctx, `SELECT f.hash, b.data FROM blob_files f JOIN blobs b ON b.hash = f.hash WHERE f.conversation = ? AND f.path = ?`, c.ID, path).Scan(&hash, &data)
		switch {
		case noSuchTable(err) || errors.Is(err, sql.ErrNoRows) && (c.Base == "" || depth > maxBases):
			return "", nil, record.NoBlob(id, path)
		case errors.Is(err, sql.ErrNoRows):
			if c, err = s.getIn(ctx, tx, c.Base, recordColumns); err != nil {
				return "", nil, fmt.Errorf("%s: %w", doing, err)
			}
			continue
		case err != nil:
			return "", nil, s.explain(doing, err)
		}
		return hash, nonNil(data), nil
	}
}

// BlobByHash returns the bytes whose hash is hash (see Blobs).
func (s *Store) BlobByHash(ctx context.Context, hash string) ([]byte, error) {
	var data []byte
	err := s.db.QueryRowContext(ctx, `SELECT data FROM blobs WHERE hash = ?`, hash).Scan(&data)
	switch {
	case errors.Is(err, sql.ErrNoRows) || noSuchTable(err):
		return nil, record.NoHash(hash)
	case err != nil:
		return nil, s.explain("reading the file of sha256 "+hash[:min(12, len(hash))], err)
	}
	return nonNil(data), nil
}

// nonNil is data, or an empty slice for nil: an empty file is kept and
// read back as empty bytes, not as NULL.
func nonNil(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}
