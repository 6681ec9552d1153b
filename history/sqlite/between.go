package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// selectRange reads the rows of one conversation numbered after its first
// ? up to the second ?, its record's row first (no row at all: no such
// conversation; a NULL seq: no rows in the range).
const selectRange = `SELECT m.seq, m.message, m.crc FROM conversations c LEFT JOIN messages m ON m.conversation = c.id AND m.seq > ? AND m.seq <= ? WHERE c.id = ? ORDER BY m.seq`

// MessagesBetween returns conversation id's messages from index from to
// index to-1 (see history.RangeReader), reading those rows only: the
// record of id and of its bases down (chain), then, from each that holds
// some of them, its rows in the range, stepped and decoded as Messages
// steps and decodes them. All in one read transaction: what it reads is
// the store at one moment, whatever a rewind or switch of another opening
// moves meanwhile. It neither reads nor fills what the store keeps of the
// conversations it has read (Messages' memory).
func (s *Store) MessagesBetween(ctx context.Context, id string, from, to int) ([]history.Message, error) {
	if err := record.CheckRange(id, from, to); err != nil {
		return nil, err
	}
	doing := fmt.Sprintf("reading messages %d to %d of conversation %s", from, to, id)
	tx, err := s.readDB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer tx.Rollback()
	top, ok, err := s.readLink(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, record.NotFound(id)
	}
	to = min(to, top.count)
	from = min(from, to)
	levels, err := s.chain(ctx, tx, top)
	if err != nil {
		return nil, err
	}
	return s.levelRows(ctx, tx, levels, from, to, make([]history.Message, 0, to-from), false)
}

// levelRows appends to out the messages numbered after from up to to of
// the conversation whose chain is levels (its own level first, its bases
// down), read in tx level by level from the bottom one, which holds the
// first (rowsBetween). With count, each level it reads from, and the
// conversation's own, is counted as Messages counts it (countLevel).
func (s *Store) levelRows(ctx context.Context, tx *sql.Tx, levels []level, from, to int, out []history.Message, count bool) ([]history.Message, error) {
	var err error
	for i := len(levels) - 1; i >= 0; i-- {
		l := levels[i]
		lo, hi := max(l.floor, from), min(l.lim, to)
		if lo >= hi {
			continue
		}
		if out, err = s.rowsBetween(ctx, tx, l.id, lo, hi, out); err != nil {
			return nil, err
		}
		if count && i > 0 {
			if err := s.countLevel(ctx, tx, l); err != nil {
				return nil, err
			}
		}
	}
	if count {
		if err := s.countLevel(ctx, tx, levels[0]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rowsBetween appends to out conversation id's own messages numbered
// after lo up to hi, read in tx: each of them, or an error saying which
// is missing.
func (s *Store) rowsBetween(ctx context.Context, tx *sql.Tx, id string, lo, hi int, out []history.Message) ([]history.Message, error) {
	doing := "reading conversation " + id
	rows, err := tx.QueryContext(ctx, selectRange, lo, hi, id)
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer rows.Close()
	d := newRowDecoder(s, id, hi)
	found, missing, scanErr := s.stepRows(rows, id, lo, d)
	rows.Close()
	n := len(out)
	out, decodeErr := d.Finish(out)
	switch {
	case scanErr != nil:
		return nil, s.explain(doing, scanErr)
	case !found:
		// its record was read in this transaction: not gone, damaged
		return nil, fmt.Errorf("history store %s: conversation %s has no record of its own: %w", s.path, id, history.ErrDamaged)
	case decodeErr != nil:
		return nil, decodeErr
	case missing != nil:
		return nil, missing
	case len(out)-n < hi-lo:
		return nil, fmt.Errorf("history store %s: conversation %s: messages %d to %d are missing: %w", s.path, id, lo+len(out)-n+1, hi, history.ErrDamaged)
	}
	return out, nil
}
