package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/internal/rowdecode"
)

// This file is the store's marks (history.Marker), kept in the
// conversation_marks table of layout 8: a row per conversation with a
// mark set — its place, the reader's facts, a stamp new with every mark
// set, and a checksum. SetMark writes it as a write of the conversation
// (its row lock, its claim checked); Rewind, Switch and Delete delete it
// in their transaction (and the layout's trigger on every UPDATE naming a
// record's base_at, as an older myelin's Rewind and Switch do). Marked
// reads it in the statement that reads the rows from it on, and keeps
// those rows (read.from > 0), so that its next read reads only the rows
// added since, as Messages does; each read compares the stamp kept with
// the stored one, so a mark set or dropped by another process is seen.

// seenMark is a conversation's mark as a read last saw it.
type seenMark struct {
	seen  bool         // false: not read yet (a Messages read does not)
	mark  history.Mark // Mark{} for none
	stamp int64        // the row's stamp; 0 for none
	crc   int64
}

// markChecksum is the checksum of conversation id's mark from place from
// with facts, kept beside it: of the id, the place and the facts' bytes.
func markChecksum(id string, from int, facts []byte) int64 {
	head := strconv.AppendInt(append([]byte(id), 0), int64(from), 10)
	return int64(crc32.Update(crc32.Checksum(append(head, 0), record.Castagnoli()), record.Castagnoli(), facts))
}

// newStamp is a mark's stamp: random, never 0 (no mark).
func newStamp() int64 {
	for {
		if v := rand.Int64(); v != 0 {
			return v
		}
	}
}

// SetMark keeps m as conversation id's mark, or drops it for Mark{} (see
// history.Marker.SetMark): a write of id, under its row lock and after
// the claim check Append makes, committed without waiting for the
// server's disk (a crash of the server may lose it, leaving the mark
// before it, which stayed true).
func (s *Store) SetMark(ctx context.Context, id string, m history.Mark) error {
	doing := fmt.Sprintf("marking conversation %s from message %d", id, m.From)
	facts := append([]byte{}, m.Facts...)
	stamp := newStamp()
	err := s.write(ctx, id, doing, true, func(tx pgx.Tx, w writeState) error {
		if err := s.counts(doing, w); err != nil {
			return err
		}
		if err := s.allows(ctx, id, w); err != nil {
			return err
		}
		if err := record.CheckMark(id, m.From, len(m.Facts), w.appended); err != nil {
			return err
		}
		var err error
		if m.From == 0 {
			_, err = tx.Exec(ctx, `DELETE FROM conversation_marks WHERE conversation = $1`, id)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO conversation_marks (conversation, "from", facts, stamp, crc) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (conversation) DO UPDATE SET "from" = excluded."from", facts = excluded.facts, stamp = excluded.stamp, crc = excluded.crc`,
				id, m.From, facts, stamp, markChecksum(id, m.From, facts))
		}
		if err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// what this store reads next compares this stamp: unchanged, the
	// facts are not sent again
	seen := seenMark{seen: true}
	if m.From > 0 {
		seen = seenMark{seen: true, mark: history.Mark{From: m.From, Facts: clipped(facts)}, stamp: stamp, crc: markChecksum(id, m.From, facts)}
	}
	s.mu.Lock()
	if r, ok := s.read[id]; ok {
		r.mark = seen
		s.read[id] = r
	}
	s.mu.Unlock()
	return nil
}

// clipped is b with no room to grow, nil when empty.
func clipped(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b[:len(b):len(b)]
}

// markedQuery reads, in one statement, conversation id ($1): its link,
// the link's checksum, its count and its record's version, its mark (k),
// and its own rows numbered from lo on. lo is $2, or with $3 the number
// of the row before the mark's first message (the mark's From: row
// numbers start at 1), whichever is later, and never before the
// conversation's own rows. The facts come in the first row only, and
// only when the mark's stamp is not $4 (what the reader saw): unchanged,
// they are not sent again.
const markedQuery = `SELECT c.base, c.base_at, c.messages, k."from", k.stamp, k.crc,
		CASE WHEN (m.seq IS NULL OR m.seq = lo.seq) AND k.stamp IS DISTINCT FROM $4::bigint THEN k.facts END,
		lo.seq, c.branch_of, c.base_crc, ` + versionColumn + `, m.seq, m.message, m.crc
	FROM conversations c
	LEFT JOIN conversation_marks k ON k.conversation = c.id
	CROSS JOIN LATERAL (SELECT GREATEST($2::integer, c.base_at + 1, CASE WHEN $3::boolean THEN k."from" END) AS seq) lo
	LEFT JOIN messages m ON m.conversation = c.id AND m.seq >= lo.seq
	WHERE c.id = $1 ORDER BY m.seq`

// knownQuery is markedQuery for a reader that knows where to read from:
// from row $2 on, bound in the statement (no lateral bound), so that the
// read before each request costs what Messages' does, and the mark's
// columns with it. Its columns are markedQuery's.
const knownQuery = `SELECT c.base, c.base_at, c.messages, k."from", k.stamp, k.crc,
		CASE WHEN (m.seq IS NULL OR m.seq = $2) AND k.stamp IS DISTINCT FROM $3::bigint THEN k.facts END,
		$2::integer, c.branch_of, c.base_crc, m.seq, m.message, m.crc
	FROM conversations c
	LEFT JOIN conversation_marks k ON k.conversation = c.id
	LEFT JOIN messages m ON m.conversation = c.id AND m.seq >= $2
	WHERE c.id = $1 ORDER BY m.seq`

// markRead is what markedQuery read of a conversation's mark.
type markRead struct {
	from  pgtype.Int4
	stamp pgtype.Int8
	crc   pgtype.Int8
	facts *[]byte // nil: not sent
	lo    int32
	// the record's branch_of and base_crc, to check its link (base,
	// base_at) by, as Get does
	branchOf string
	baseCRC  int64
}

// markedRows runs markedQuery for conversation id from row from (with
// fromMark, from the row before its mark's first message, if later),
// its facts sent unless its stamp is seen's.
func (s *Store) markedRows(ctx context.Context, id string, from int, fromMark bool, seen int64, b *rowdecode.Batches, decode int) (ownState, markRead, error) {
	var k markRead
	extra := []any{&k.from, &k.stamp, &k.crc, &k.facts, &k.lo, &k.branchOf, &k.baseCRC}
	if !fromMark {
		own, err := s.scanRows(ctx, id, b, decode, extra, knownQuery, id, from, seen)
		return own, k, err
	}
	var version uint32
	own, err := s.scanRows(ctx, id, b, decode, append(extra, &version), markedQuery, id, from, true, seen)
	own.version = version
	return own, k, err
}

// mark is the mark k read of conversation id, of count messages, checked:
// against its checksum when its facts came, else against the mark seen,
// whose stamp it has; a mark past the end is damage too.
func (s *Store) mark(id string, count int, k markRead, seen seenMark) (seenMark, error) {
	if !k.from.Valid {
		return seenMark{seen: true}, nil
	}
	from := int(k.from.Int32)
	if k.facts == nil {
		if !seen.seen || seen.stamp != k.stamp.Int64 {
			return seenMark{}, fmt.Errorf("history store %s: conversation %s: its mark's facts were not read", s.name, id)
		}
		if seen.mark.From != from || seen.crc != k.crc.Int64 {
			return seenMark{}, fmt.Errorf("history store %s: the mark of conversation %s is damaged: its place or checksum changed under the same stamp: %w", s.name, id, history.ErrDamaged)
		}
	} else if sum := markChecksum(id, from, *k.facts); sum != k.crc.Int64 {
		return seenMark{}, fmt.Errorf("history store %s: the mark of conversation %s is damaged: its place (%d) or facts no longer match their checksum (stored %08x, now %08x): %w", s.name, id, from, k.crc.Int64, sum, history.ErrDamaged)
	}
	if from < 1 || from > count {
		return seenMark{}, fmt.Errorf("history store %s: the mark of conversation %s is damaged: it starts at message %d, and the conversation holds %d: %w", s.name, id, from, count, history.ErrDamaged)
	}
	if k.facts == nil {
		return seen, nil
	}
	return seenMark{seen: true, mark: history.Mark{From: from, Facts: clipped(*k.facts)}, stamp: k.stamp.Int64, crc: k.crc.Int64}, nil
}

// Marked returns conversation id's mark and its messages from the mark's
// From on (see history.Marker.Marked). What the store keeps of id serves
// it when it holds the mark's From: then one statement reads the mark
// and the rows added since, as Messages does. Otherwise one statement
// reads the mark and the rows from the one before its From (kept, so
// that the next read can check it still stands), through a fork's base
// for the messages it shares; and those are kept. The messages and the
// facts are shared with the store's memory: callers must not modify them
// (an append copies).
func (s *Store) Marked(ctx context.Context, id string) (history.Mark, []history.Message, error) {
	s.mu.Lock()
	known, had := s.read[id]
	s.mu.Unlock()
	if had && (len(known.msgs) > 0 || known.from > 0 || known.baseAt > 0) {
		m, msgs, ok, err := s.markedKnown(ctx, id, known)
		if err != nil || ok {
			return m, msgs, err
		}
	}
	return s.markedCold(ctx, id)
}

// markedKnown is Marked from what the store keeps of id (known), reading
// the mark and the rows after the last one known in one statement; ok is
// false when known no longer serves (rewound, switched, or a mark from
// before what it holds): then nothing is returned, and it is forgotten
// when it no longer stands.
func (s *Store) markedKnown(ctx context.Context, id string, known read) (history.Mark, []history.Message, bool, error) {
	n := known.end()
	from := n
	if n <= known.baseAt {
		from = known.baseAt + 1
	}
	var b rowdecode.Batches
	defer b.Stop()
	own, k, err := s.markedRows(ctx, id, from, false, known.mark.stamp, &b, n+1)
	if errors.Is(err, history.ErrNotFound) {
		s.forget(id) // deleted since by another process: not served from memory
		return history.Mark{}, nil, false, err
	}
	if err != nil {
		return history.Mark{}, nil, false, err
	}
	rows := own.rows
	valid := own.base == known.base && own.baseAt == known.baseAt
	if valid && n > known.baseAt {
		valid = len(rows) > 0 && rows[0].Seq == n && rows[0].CRC == known.lastCRC
		rows = rows[min(1, len(rows)):]
	}
	if !valid {
		s.forget(id) // rewound or switched since
		return history.Mark{}, nil, false, nil
	}
	if k.from.Valid && k.facts == nil && known.mark.stamp != k.stamp.Int64 {
		return history.Mark{}, nil, false, nil // the facts of a mark set since went with a row not there: read again
	}
	seen, err := s.mark(id, own.count, k, known.mark)
	if err != nil {
		return history.Mark{}, nil, false, err
	}
	if seen.mark.From < known.from {
		return history.Mark{}, nil, false, nil // set earlier since (or dropped): what is kept does not reach it
	}
	fresh, last, err := s.decodeRows(id, n+1, own, rows, &b)
	if err != nil {
		return history.Mark{}, nil, false, err
	}
	if err := s.counted(id, n+len(fresh), own.count); err != nil {
		return history.Mark{}, nil, false, err
	}
	known.mark = seen
	all := s.remember(id, known, fresh, last)
	tail := all[seen.mark.From-known.from:]
	return seen.mark, tail[:len(tail):len(tail)], true, nil
}

// markedCold is Marked of conversation id with nothing kept of it: one
// statement reads its mark and its own rows from the one before the
// mark's From; a fork whose mark falls in what it shares reads those
// messages through its base (as MessagesBetween does), then reads its
// record's version again, and reads all again when its record was
// written meanwhile (a rewind or switch may have moved its link, even
// away and back), the last time in one snapshot (oneMoment, moments.go).
func (s *Store) markedCold(ctx context.Context, id string) (history.Mark, []history.Message, error) {
	var mark history.Mark
	var out []history.Message
	err := s.oneMoment(ctx, id, func(ctx context.Context) (bool, error) {
		var b rowdecode.Batches
		own, k, err := s.markedRows(ctx, id, 1, true, 0, &b, 0)
		b.Stop() // the decoders finish what they were handed, whatever this pass does next
		if errors.Is(err, history.ErrNotFound) {
			s.forget(id)
			return false, err
		}
		if err != nil {
			return false, err
		}
		if err := s.checkBase(id, own.base, own.baseAt, k.branchOf, k.baseCRC); err != nil {
			return false, err
		}
		if k.from.Valid && k.facts == nil {
			// the facts ride the first row, which is not the one before
			// the mark: a row is missing (decodeRows says which)
			if _, _, err := s.decodeRows(id, int(k.lo), own, own.rows, &b); err != nil {
				return false, err
			}
			return false, fmt.Errorf("history store %s: conversation %s: the row before its mark's first message (%d) is missing: %w", s.name, id, k.lo, history.ErrDamaged)
		}
		seen, err := s.mark(id, own.count, k, seenMark{})
		if err != nil {
			return false, err
		}
		lo := int(k.lo) // the first own row read
		fresh, last, err := s.decodeRows(id, lo, own, own.rows, &b)
		if err != nil {
			return false, err
		}
		if err := s.counted(id, lo-1+len(fresh), own.count); err != nil {
			return false, err
		}
		from := seen.mark.From
		kept := read{from: from, base: own.base, baseAt: own.baseAt, mark: seen}
		if from < own.baseAt {
			throughBase(id, false)
			shared, err := s.between(ctx, own.base, from, own.baseAt, 1)
			throughBase(id, true)
			if err != nil && !errors.Is(err, history.ErrNotFound) {
				return false, err
			}
			// read after its own rows: the base's part read is the one
			// they go with unless its record was written meanwhile (its
			// link moved, even away and back)
			moved, merr := s.moved(ctx, id, own.version)
			if merr != nil {
				return false, fmt.Errorf("history store %s: reading conversation %s from its mark: its record could not be read again after messages %d to %d were read through conversation %s, to see whether a rewind moved it meanwhile: %w", s.name, id, from, own.baseAt, own.base, merr)
			}
			if moved {
				return true, nil
			}
			if errors.Is(err, history.ErrNotFound) {
				return false, fmt.Errorf("history store %s: conversation %s shares its first %d messages with conversation %s, which is not in the store: %w", s.name, id, own.baseAt, own.base, history.ErrDamaged)
			}
			if len(shared) < own.baseAt-from {
				return false, fmt.Errorf("history store %s: conversation %s shares its first %d messages with conversation %s, which holds %d: %w", s.name, id, own.baseAt, own.base, from+len(shared), history.ErrDamaged)
			}
			kept.msgs = shared[:len(shared):len(shared)]
		} else if len(fresh) > 0 {
			kept.from = lo - 1 // the row before the mark's first message, kept to check it stands
		}
		all := s.remember(id, kept, fresh, last)
		tail := all[from-kept.from:]
		mark, out = seen.mark, tail[:len(tail):len(tail)]
		return false, nil
	})
	return mark, out, err
}

// counted is the error for conversation id read as total messages where
// its record counts count: rows missing at its end, or rows past it (as
// Get's count of the rows finds them); nil when they agree.
func (s *Store) counted(id string, total, count int) error {
	switch {
	case total < count:
		return fmt.Errorf("history store %s: conversation %s: messages %d to %d are missing (%d stored): %w", s.name, id, total+1, count, count, history.ErrDamaged)
	case total > count:
		return fmt.Errorf("history store %s: conversation %s holds %d messages, but %d were stored in it: %w", s.name, id, total, count, history.ErrDamaged)
	}
	return nil
}
