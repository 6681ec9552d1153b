package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/internal/rowdecode"
)

// MessagesBetween returns conversation id's messages from index from to
// index to-1 (see history.RangeReader), reading those rows only: as
// readAll reads a conversation whole — its record, the part of the range
// it shares read through its base the same way, then its own rows in the
// range in one statement with its link and its record's version, read
// again from the start when the record was written meanwhile, the last
// time in one snapshot (oneMoment, moments.go) — so that what it returns
// is the conversation at one moment. It neither reads nor fills what the store
// keeps of the conversations it has read (Messages' memory).
func (s *Store) MessagesBetween(ctx context.Context, id string, from, to int) ([]history.Message, error) {
	if err := record.CheckRange(id, from, to); err != nil {
		return nil, err
	}
	return s.between(ctx, id, from, to, 0)
}

// between is MessagesBetween of conversation id, reached through depth
// forks.
func (s *Store) between(ctx context.Context, id string, from, to, depth int) ([]history.Message, error) {
	if depth > maxChain {
		return nil, fmt.Errorf("history store %s: conversation %s: its first messages are shared through more than %d conversations (a loop): %w", s.name, id, maxChain, history.ErrDamaged)
	}
	var out []history.Message
	err := s.oneMoment(ctx, id, func(ctx context.Context) (bool, error) {
		c, version, err := s.getVersioned(ctx, id)
		if err != nil {
			return false, err
		}
		hi := min(to, c.Messages)
		lo := min(from, hi)
		out = make([]history.Message, 0, hi-lo)
		if lo < c.BaseAt {
			upTo := min(hi, c.BaseAt)
			throughBase(id, false)
			shared, err := s.between(ctx, c.Base, lo, upTo, depth+1)
			throughBase(id, true)
			if err != nil && !errors.Is(err, history.ErrNotFound) {
				return false, err
			}
			if err != nil || len(shared) < upTo-lo {
				// damage unless its record changed since it was read
				moved, merr := s.moved(ctx, id, version)
				if merr != nil {
					return false, fmt.Errorf("history store %s: reading messages %d to %d of conversation %s: its base %s came out short or missing, and its record could not be read again to see whether a rewind moved it meanwhile: %w", s.name, lo, upTo, id, c.Base, merr)
				}
				if moved {
					return true, nil
				}
			}
			if errors.Is(err, history.ErrNotFound) {
				return false, fmt.Errorf("history store %s: conversation %s shares its first %d messages with conversation %s, which is not in the store: %w", s.name, id, c.BaseAt, c.Base, history.ErrDamaged)
			}
			if len(shared) < upTo-lo {
				return false, fmt.Errorf("history store %s: conversation %s shares its first %d messages with conversation %s, which holds %d: %w", s.name, id, c.BaseAt, c.Base, lo+len(shared), history.ErrDamaged)
			}
			out = append(out, shared...)
		}
		// read after the base's messages, with the record's version: a
		// record written meanwhile (its link moved, even away and back)
		// is read again
		first := max(lo, c.BaseAt) + 1
		var b rowdecode.Batches
		rowsOf := s.ownRows
		if lo < c.BaseAt {
			rowsOf = s.versionedRows
		}
		own, err := rowsOf(ctx, id, first, hi, &b, first)
		b.Stop() // the decoders finish what they were handed, whatever this pass does next
		if err != nil {
			return false, err
		}
		if own.base != c.Base || own.baseAt != c.BaseAt || own.count < hi || lo < c.BaseAt && own.version != version {
			return true, nil // rewound or switched since its record was read
		}
		fresh, _, err := s.decodeRows(id, first, own, own.rows, &b)
		if err != nil {
			return false, err
		}
		if n := first - 1 + len(fresh); n < hi {
			return false, fmt.Errorf("history store %s: conversation %s: messages %d to %d are missing (%d stored): %w", s.name, id, n+1, hi, own.count, history.ErrDamaged)
		}
		out = append(out, fresh...)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
