package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

var _ history.Deleter = (*Store)(nil)

// Delete removes conversation id whole, with its branches, in one
// transaction committed to the server's disk (see history.Deleter), under
// the conversation's row lock like every write, its claim checked as
// theirs is: refused (history.ErrHasForks) while another conversation
// shares its messages or a branch's. Their kept results, claims,
// requests, files, marks and messages go, then the bytes of their files
// that no other conversation's file has, then their records. A file of
// another conversation that takes the same bytes at that moment keeps
// them: those bytes stay.
func (s *Store) Delete(ctx context.Context, id string) error {
	doing := "deleting conversation " + id
	var gone []string
	err := s.write(ctx, id, doing, false, func(tx pgx.Tx, w writeState) error {
		if err := s.allows(ctx, id, w); err != nil {
			return err
		}
		// its branches (and theirs) go with it, locked as it is: a fork
		// of one waits
		var err error
		if gone, err = s.branchesWith(ctx, tx, id); err != nil {
			return s.explain(doing, err)
		}
		if err := s.unwritten(ctx, tx, gone[1:], w.now); err != nil {
			return err // a branch its own writer holds
		}
		// read after the locks: a fork made before them is seen
		rows, err := tx.Query(ctx, `SELECT id FROM conversations WHERE base = ANY($1) AND NOT id = ANY($1) ORDER BY id`, gone)
		if err != nil {
			return s.explain(doing, err)
		}
		forks, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return s.explain(doing, err)
		}
		if len(forks) > 0 {
			return record.HasForks(id, forks)
		}
		rows, err = tx.Query(ctx, `SELECT DISTINCT hash FROM blob_files WHERE conversation = ANY($1)`, gone)
		if err != nil {
			return s.explain(doing, err)
		}
		hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return s.explain(doing, err)
		}
		for _, q := range []string{
			`DELETE FROM kept WHERE conversation = ANY($1)`,
			`DELETE FROM claims WHERE conversation = ANY($1)`,
			`DELETE FROM requests WHERE conversation = ANY($1)`,
			`DELETE FROM blob_files WHERE conversation = ANY($1)`,
			`DELETE FROM conversation_marks WHERE conversation = ANY($1)`,
			`DELETE FROM messages WHERE conversation = ANY($1)`,
			`DELETE FROM conversations WHERE id = ANY($1)`,
		} {
			if _, err := tx.Exec(ctx, q, gone); err != nil {
				return s.explain(doing, err)
			}
		}
		if len(hashes) == 0 {
			return nil
		}
		// in a savepoint: another conversation's file of the same bytes,
		// kept at this moment, holds them (a foreign key violation), and
		// they stay
		sp, err := tx.Begin(ctx)
		if err != nil {
			return s.explain(doing, err)
		}
		_, err = sp.Exec(ctx, `DELETE FROM blobs b WHERE b.hash = ANY($1) AND NOT EXISTS (SELECT 1 FROM blob_files f WHERE f.hash = b.hash)`, hashes)
		if isCode(err, "23503") {
			return sp.Rollback(ctx)
		}
		if err != nil {
			return s.explain(doing, err)
		}
		if err := sp.Commit(ctx); err != nil {
			return s.explain(doing, err)
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

// branchesWith returns conversation id followed by its branches, theirs,
// and so on, their records locked (FOR UPDATE) in tx: found, locked, and
// found again until no rewind of one meanwhile made a branch more.
func (s *Store) branchesWith(ctx context.Context, tx pgx.Tx, id string) ([]string, error) {
	const find = `WITH RECURSIVE b(id) AS (SELECT $1::text UNION SELECT c.id FROM conversations c JOIN b ON c.branch_of = b.id) SELECT id FROM b ORDER BY id = $1 DESC, id`
	var locked []string
	for {
		rows, err := tx.Query(ctx, find, id)
		if err != nil {
			return nil, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		if slices.Equal(ids, locked) {
			return ids, nil
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM conversations WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
			return nil, err
		}
		locked = ids
	}
}

// forget drops what the store keeps in memory of conversation id (its
// messages read, its newest request body): for a conversation deleted,
// so that one made again under its id starts empty.
func (s *Store) forget(id string) {
	s.mu.Lock()
	delete(s.read, id)
	s.mu.Unlock()
	s.sent.Forget(id)
}
