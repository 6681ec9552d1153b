package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

var _ history.Deleter = (*Store)(nil)

// Delete removes conversation id whole, in one synced transaction (see
// Deleter): its claim is checked in it as every write's is, then its
// kept results, claim, mark, requests, files and messages go, the bytes
// of its files that no other conversation's file has, and last its
// record. Its
// branches (and theirs) go with it, each checked like it; while another
// conversation shares the messages of any of them (a fork), nothing is
// deleted (history.ErrHasForks).
func (s *Store) Delete(ctx context.Context, id string) error {
	doing := "deleting conversation " + id
	var gone []string
	err := s.write(ctx, doing, false, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return record.NotFound(id)
		}
		if err != nil {
			return s.explain(doing, err)
		}
		if err := s.checkClaim(ctx, tx, id); err != nil {
			return err
		}
		if gone, err = s.withBranches(ctx, tx, id); err != nil {
			return s.explain(doing, err)
		}
		if err := s.checkNoForks(ctx, tx, id, gone); err != nil {
			return err
		}
		for _, b := range gone[1:] {
			// a branch nobody writes: a live holder of its claim refuses
			c, ok, err := s.readClaim(ctx, tx, b)
			if err != nil {
				return err
			}
			if err := s.claimAllows(context.Background(), b, c, ok); err != nil {
				return err
			}
		}
		for _, c := range gone {
			if err := s.deleteOne(ctx, tx, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range gone {
		s.forget(c)
	}
	return nil
}

// withBranches returns id followed by its branches, theirs, and so on.
func (s *Store) withBranches(ctx context.Context, tx *sql.Tx, id string) ([]string, error) {
	out := []string{id}
	for i := 0; i < len(out); i++ {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM conversations WHERE branch_of = ? ORDER BY id`, out[i])
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var b string
			if err := rows.Scan(&b); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkNoForks returns the error for deleting conversation id with gone
// (it and its branches) while another conversation shares their messages.
func (s *Store) checkNoForks(ctx context.Context, tx *sql.Tx, id string, gone []string) error {
	in := map[string]bool{}
	for _, g := range gone {
		in[g] = true
	}
	var forks []string
	for _, g := range gone {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM conversations WHERE base = ? ORDER BY id`, g)
		if err != nil {
			return s.explain("deleting conversation "+id, err)
		}
		for rows.Next() {
			var f string
			if err := rows.Scan(&f); err != nil {
				rows.Close()
				return s.explain("deleting conversation "+id, err)
			}
			if !in[f] {
				forks = append(forks, f)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.explain("deleting conversation "+id, err)
		}
	}
	if len(forks) > 0 {
		return record.HasForks(id, forks)
	}
	return nil
}

// deleteOne deletes conversation id's rows of every table, in tx.
func (s *Store) deleteOne(ctx context.Context, tx *sql.Tx, id string) error {
	doing := "deleting conversation " + id
	// the tables a store makes on first use may not be there
	tables := map[string]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('requests', 'blob_files', 'blobs')`)
	if err != nil {
		return s.explain(doing, err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return s.explain(doing, err)
		}
		tables[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.explain(doing, err)
	}
	var hashes []string
	if tables["blob_files"] {
		if hashes, err = s.deletedHashes(ctx, tx, id); err != nil {
			return s.explain(doing, err)
		}
	}
	stmts := []string{`DELETE FROM kept WHERE conversation = ?`, `DELETE FROM claims WHERE conversation = ?`, dropMarkSQL}
	if tables["requests"] {
		stmts = append(stmts, `DELETE FROM requests WHERE conversation = ?`)
	}
	if tables["blob_files"] {
		stmts = append(stmts, `DELETE FROM blob_files WHERE conversation = ?`)
	}
	stmts = append(stmts, `DELETE FROM messages WHERE conversation = ?`, `DELETE FROM conversations WHERE id = ?`)
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return s.explain(doing, err)
		}
	}
	// the bytes only this conversation's files had go with them
	for _, h := range hashes {
		if _, err := tx.ExecContext(ctx, `DELETE FROM blobs WHERE hash = ? AND NOT EXISTS (SELECT 1 FROM blob_files WHERE hash = ?)`, h, h); err != nil {
			return s.explain(doing, err)
		}
	}
	return nil
}

// deletedHashes are the hashes of conversation id's files, read in tx.
func (s *Store) deletedHashes(ctx context.Context, tx *sql.Tx, id string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT hash FROM blob_files WHERE conversation = ?`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// forget drops what the store keeps in memory of conversation id (its
// messages read, its newest request body): for a conversation deleted,
// rewound or switched, so that one made again under its id starts empty.
// A read begun before keeps no mark it read (markGen), as after SetMark:
// its snapshot may hold the mark the write dropped.
func (s *Store) forget(id string) {
	s.mu.Lock()
	s.dropReadLocked(id)
	s.markGen++
	s.mu.Unlock()
	s.sent.Forget(id)
}
