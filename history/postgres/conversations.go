package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/internal/rowdecode"
)

// Create starts a conversation (see history.Store.Create).
func (s *Store) Create(ctx context.Context, c history.Conversation) error {
	if c.ID == "" {
		return errors.New("creating a conversation: its id is empty")
	}
	if c.Created.IsZero() {
		c.Created = s.hostNow()
	}
	if err := record.CheckLink(c.ID, c.Parent, c.ParentCall); err != nil {
		return err
	}
	created := c.Created.UTC().Format(record.TimeFormat)
	// made only when its parent, if it names one, is there (a parent
	// deleted after this statement leaves the child naming it, as
	// history.Deleter allows)
	updated := toMicro(c.Created)
	tag, err := s.pool.Exec(ctx, `INSERT INTO conversations (id, system, created, updated, crc, parent, parent_call, updated_crc)
		SELECT $1::text, $2::bytea, $3::text, $4::timestamptz, $5::bigint, $6::text, $7::text, $8::bigint
		WHERE $6::text = '' OR EXISTS (SELECT 1 FROM conversations WHERE id = $6::text)
		ON CONFLICT (id) DO NOTHING`,
		c.ID, []byte(c.System), created, updated, record.RecordChecksum(c.ID, c.System, created, c.Parent, c.ParentCall), c.Parent, c.ParentCall, updatedChecksum(c.ID, updated))
	if err != nil {
		return s.explain("creating conversation "+c.ID, err)
	}
	if tag.RowsAffected() == 0 && c.Parent != "" {
		var parent bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1)`, c.Parent).Scan(&parent); err != nil {
			return s.explain("creating conversation "+c.ID, err)
		}
		if !parent {
			return record.NoParent(c.ID, c.Parent)
		}
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("creating conversation %s: %w (another process may have created it at the same moment)", c.ID, history.ErrExists)
	}
	s.forget(c.ID) // what a read of a deleted conversation of this id kept meanwhile
	return nil
}

// recordColumns are what Get and List read of a conversation (c), for
// scanConversation: its count of stored messages beside the count kept.
const recordColumns = `c.id, c.system, c.created, c.updated, (SELECT count(*) FROM messages m WHERE m.conversation = c.id), c.messages, c.crc, c.parent, c.parent_call, c.updated_crc,
	c.base, c.base_at, c.branch_of, c.base_crc`

// recordColumnsAsStored are recordColumns without the count of the
// rows: the count kept stands for it (Record).
const recordColumnsAsStored = `c.id, c.system, c.created, c.updated, c.messages - c.base_at, c.messages, c.crc, c.parent, c.parent_call, c.updated_crc,
	c.base, c.base_at, c.branch_of, c.base_crc`

// Record returns a conversation's record without counting its messages
// (see history.RecordReader): its checksums checked, its count the count
// kept.
func (s *Store) Record(ctx context.Context, id string) (history.Conversation, error) {
	c, err := s.scanConversation(s.pool.QueryRow(ctx, `SELECT `+recordColumnsAsStored+` FROM conversations c WHERE c.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return history.Conversation{}, record.NotFound(id)
	}
	if err != nil && !errors.Is(err, history.ErrDamaged) {
		return history.Conversation{}, s.explain("reading conversation "+id, err)
	}
	return c, err
}

// Get returns a conversation's record (see history.Store.Get).
func (s *Store) Get(ctx context.Context, id string) (history.Conversation, error) {
	c, err := s.scanConversation(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM conversations c WHERE c.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return history.Conversation{}, record.NotFound(id)
	}
	if err != nil && !errors.Is(err, history.ErrDamaged) {
		return history.Conversation{}, s.explain("reading conversation "+id, err)
	}
	return c, err
}

// scanConversation reads a conversation's record and checks it against
// its checksums and its count of messages: those it shares (BaseAt) and
// those stored in it.
func (s *Store) scanConversation(row pgx.Row) (history.Conversation, error) {
	var c history.Conversation
	var system []byte
	var created string
	var stored int64
	var appended int
	var crc, updatedCRC, baseCRC int64
	if err := row.Scan(&c.ID, &system, &created, &c.Updated, &stored, &appended, &crc, &c.Parent, &c.ParentCall, &updatedCRC,
		&c.Base, &c.BaseAt, &c.BranchOf, &baseCRC); err != nil {
		return c, err
	}
	c.System = string(system)
	c.Messages, c.Updated = c.BaseAt+int(stored), c.Updated.UTC()
	if sum := record.RecordChecksum(c.ID, c.System, created, c.Parent, c.ParentCall); sum != crc {
		return c, fmt.Errorf("history store %s: the record of conversation %s is damaged: its id, system prompt, creation time or parent no longer match their checksum (stored %08x, now %08x): %w", s.name, c.ID, crc, sum, history.ErrDamaged)
	}
	if sum := updatedChecksum(c.ID, c.Updated); sum != updatedCRC {
		return c, fmt.Errorf("history store %s: the record of conversation %s is damaged: its last update time (%s) no longer matches its checksum (stored %08x, now %08x): %w", s.name, c.ID, c.Updated.Format(record.TimeFormat), updatedCRC, sum, history.ErrDamaged)
	}
	if err := s.checkBase(c.ID, c.Base, c.BaseAt, c.BranchOf, baseCRC); err != nil {
		return c, err
	}
	if c.Messages != appended {
		return c, fmt.Errorf("history store %s: conversation %s holds %d messages, but %d were stored in it: %w", s.name, c.ID, c.Messages, appended, history.ErrDamaged)
	}
	var err error
	if c.Created, err = time.Parse(record.TimeFormat, created); err != nil {
		return c, fmt.Errorf("history store %s: the record of conversation %s is damaged: %v: %w", s.name, c.ID, err, history.ErrDamaged)
	}
	return c, nil
}

// List returns the conversations, most recently updated first, without
// their branches (see history.Brancher).
func (s *Store) List(ctx context.Context) ([]history.Conversation, error) {
	// branches are listed by Branches, under the conversation they were
	// rewound from
	return s.records(ctx, "listing conversations", `SELECT `+recordColumns+` FROM conversations c WHERE c.branch_of = '' ORDER BY c.updated DESC, c.id`)
}

// Children returns the conversations whose Parent is id, oldest first
// (see history.Family).
func (s *Store) Children(ctx context.Context, id string) ([]history.Conversation, error) {
	if id == "" {
		return nil, nil
	}
	out, err := s.records(ctx, "listing the conversations started by "+id, `SELECT `+recordColumns+` FROM conversations c WHERE c.parent = $1`, id)
	history.SortChildren(out) // created is text of varying length: ordered as times here
	return out, err
}

// records reads the conversation records query gives, checked.
func (s *Store) records(ctx context.Context, doing, query string, args ...any) ([]history.Conversation, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer rows.Close()
	var out []history.Conversation
	for rows.Next() {
		c, err := s.scanConversation(rows)
		if errors.Is(err, history.ErrDamaged) {
			return nil, err
		}
		if err != nil {
			return nil, s.explain(doing, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain(doing, err)
	}
	return out, nil
}

// read is what the store keeps in memory of a conversation it has read:
// its messages from place from on (0 but after a Marked, which reads from
// the mark), and what shows that they are still its messages (a Rewind
// or Switch of it replaces those after its point).
type read struct {
	msgs   []history.Message // from place from to the end as last read
	from   int
	base   string // the record's Base and BaseAt when msgs were read
	baseAt int
	// lastCRC is the checksum of the row of the last message in msgs,
	// when that message is the conversation's own (from+len(msgs) >
	// baseAt): a rewind moves that row away, a switch replaces it
	lastCRC int64
	mark    seenMark // the conversation's mark as last read (marks.go)
}

// end is the place after the last message r holds.
func (r read) end() int { return r.from + len(r.msgs) }

// maxChain bounds how many conversations a read goes through to reach a
// conversation's first messages (a fork of a fork of ...): a longer chain
// is a loop, which no store writes.
const maxChain = 1000

// Messages returns a conversation's messages in order, reading only those
// stored since its last read (see history.Store.Messages): a fork's first
// messages are its base's, read through the base (and kept in memory
// under it). The slice and the messages in it are shared with the
// store's memory: callers must not modify them.
func (s *Store) Messages(ctx context.Context, id string) ([]history.Message, error) {
	return s.messages(ctx, id, 0)
}

// messages is Messages of conversation id, reached through depth forks.
func (s *Store) messages(ctx context.Context, id string, depth int) ([]history.Message, error) {
	if depth > maxChain {
		return nil, fmt.Errorf("history store %s: conversation %s: its first messages are shared through more than %d conversations (a loop): %w", s.name, id, maxChain, history.ErrDamaged)
	}
	s.mu.Lock()
	known := s.read[id]
	s.mu.Unlock()
	if len(known.msgs) == 0 || known.from > 0 {
		// nothing kept, or only the messages from a mark on (Marked): read
		// whole, and kept whole from then on
		return s.readAll(ctx, id, depth)
	}
	// one query, ordered by the index: the record (still there? still
	// sharing the same messages?), the row of the last message known
	// (still the same?) and those after it
	n := len(known.msgs)
	from := n
	if n <= known.baseAt {
		from = known.baseAt + 1
	}
	var b rowdecode.Batches
	defer b.Stop()
	own, err := s.ownRows(ctx, id, from, noEnd, &b, n+1)
	if errors.Is(err, history.ErrNotFound) {
		s.forget(id) // deleted since by another process: not served from memory
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	rows := own.rows
	valid := own.base == known.base && own.baseAt == known.baseAt
	if valid && n > known.baseAt {
		valid = len(rows) > 0 && rows[0].Seq == n && rows[0].CRC == known.lastCRC
		rows = rows[min(1, len(rows)):]
	}
	if !valid {
		// rewound or switched since (or pointed at another conversation
		// holding the same messages): read again, this read's decoders
		// ended first
		b.Stop()
		s.forget(id)
		return s.readAll(ctx, id, depth)
	}
	fresh, last, err := s.decodeRows(id, n+1, own, rows, &b)
	if err != nil {
		return nil, err
	}
	if len(fresh) == 0 {
		last = known.lastCRC
	}
	if total := n + len(fresh); total < own.count {
		return nil, fmt.Errorf("history store %s: conversation %s: messages %d to %d are missing (%d stored): %w", s.name, id, total+1, own.count, own.count, history.ErrDamaged)
	}
	return s.remember(id, known, fresh, last), nil
}

// readAll reads conversation id whole: its record, the messages it shares
// (through its base) and its own rows. A fork's own rows are read with
// its record's version (versionColumn): unchanged since its record was
// read, no rewind or switch moved its link meanwhile — not even away and
// back, which a comparison of the link alone does not see — so what was
// read through its base is its; else it is read again, the last time in
// one snapshot (oneMoment, moments.go).
func (s *Store) readAll(ctx context.Context, id string, depth int) ([]history.Message, error) {
	var out []history.Message
	err := s.oneMoment(ctx, id, func(ctx context.Context) (bool, error) {
		c, version, err := s.getVersioned(ctx, id)
		if err != nil {
			return false, err
		}
		var shared []history.Message
		if c.BaseAt > 0 {
			throughBase(id, false)
			all, err := s.messages(ctx, c.Base, depth+1)
			throughBase(id, true)
			if err != nil && !errors.Is(err, history.ErrNotFound) {
				return false, err
			}
			if err != nil || len(all) < c.BaseAt {
				// damage unless its record changed since it was read
				moved, merr := s.moved(ctx, id, version)
				if merr != nil {
					return false, fmt.Errorf("history store %s: reading conversation %s: its base %s came out short or missing, and its record could not be read again to see whether a rewind moved it meanwhile: %w", s.name, id, c.Base, merr)
				}
				if moved {
					return true, nil
				}
			}
			if errors.Is(err, history.ErrNotFound) {
				return false, fmt.Errorf("history store %s: conversation %s shares its first %d messages with conversation %s, which is not in the store: %w", s.name, id, c.BaseAt, c.Base, history.ErrDamaged)
			}
			if len(all) < c.BaseAt {
				return false, fmt.Errorf("history store %s: conversation %s shares its first %d messages with conversation %s, which holds %d: %w", s.name, id, c.BaseAt, c.Base, len(all), history.ErrDamaged)
			}
			shared = all[:c.BaseAt:c.BaseAt]
		}
		// read after the base's messages: a record changed meanwhile is
		// read again
		var b rowdecode.Batches
		// sharing nothing, its rows and count are one statement's (the one
		// Messages' warm read runs), with nothing read before to check
		rowsOf := s.ownRows
		if c.BaseAt > 0 {
			rowsOf = s.versionedRows
		}
		own, err := rowsOf(ctx, id, c.BaseAt+1, noEnd, &b, c.BaseAt+1)
		b.Stop() // the decoders finish what they were handed, whatever this pass does next
		if errors.Is(err, history.ErrNotFound) {
			s.forget(id)
			return false, err
		}
		if err != nil {
			return false, err
		}
		if own.base != c.Base || own.baseAt != c.BaseAt || c.BaseAt > 0 && own.version != version {
			// a conversation sharing nothing is its rows and count, read
			// in one statement: only its link matters
			return true, nil
		}
		fresh, last, err := s.decodeRows(id, c.BaseAt+1, own, own.rows, &b)
		if err != nil {
			return false, err
		}
		if total := len(shared) + len(fresh); total < own.count {
			return false, fmt.Errorf("history store %s: conversation %s: messages %d to %d are missing (%d stored): %w", s.name, id, total+1, own.count, own.count, history.ErrDamaged)
		}
		out = s.remember(id, read{msgs: shared, base: c.Base, baseAt: c.BaseAt}, fresh, last)
		return false, nil
	})
	return out, err
}

// ownState is what ownRows reads of a conversation.
type ownState struct {
	base   string
	baseAt int
	count  int // its count of messages, shared ones included
	// version is its record's version (versionColumn), when the
	// statement read it (versionedRows, markedQuery)
	version uint32
	rows    []rowdecode.Row
	// added is how many of rows, from the one numbered ownRows' decode
	// on and without a gap, were handed to its Batches as they came
	added int
}

// noEnd is ownRows' to for all the rows from its from on.
const noEnd = math.MaxInt32

// ownRows reads, in one statement, conversation id's link to the messages
// it shares, its count and its own rows numbered from to to; a
// conversation not in the store is ErrNotFound. The rows' bytes are
// copied by b (many to an allocation), and the rows numbered decode on
// are handed to b as they come, so that they are decoded while the next
// are fetched, up to the first gap in their numbers (decodeRows reports
// it).
func (s *Store) ownRows(ctx context.Context, id string, from, to int, b *rowdecode.Batches, decode int) (ownState, error) {
	return s.scanRows(ctx, id, b, decode, nil, `SELECT c.base, c.base_at, c.messages, m.seq, m.message, m.crc FROM conversations c
		LEFT JOIN messages m ON m.conversation = c.id AND m.seq >= $2 AND m.seq <= $3 WHERE c.id = $1 ORDER BY m.seq`, id, from, to)
}

// scanRows runs query, a read of conversation id (as ownRows'): its
// columns are the conversation's base, base_at and messages, then as
// many more of the conversation as extra has destinations (scanned from
// the first row only), then a row's seq, message and crc (NULL when no
// row matched); its rows are ordered by seq. The rows numbered decode on
// (with decode 0, from the first row's on) are handed to b as they come,
// up to the first gap.
func (s *Store) scanRows(ctx context.Context, id string, b *rowdecode.Batches, decode int, extra []any, query string, args ...any) (ownState, error) {
	doing := "reading conversation " + id
	var out ownState
	rows, err := s.q(ctx).Query(ctx, query, args...)
	if err != nil {
		return out, s.explain(doing, err)
	}
	defer rows.Close()
	head := 3 + len(extra)
	// the message's bytes as the wire gives them, when they come in
	// binary (a bytea's binary form is its bytes), copied by b: not an
	// allocation a row as a scan into a []byte makes
	fields := rows.FieldDescriptions()
	binary := len(fields) == head+3 && fields[head+1].Format == pgx.BinaryFormatCode
	var seq pgtype.Int4
	var raw []byte
	var crc pgtype.Int8
	msg := any(&raw)
	if binary {
		msg = nil // read below, from the row's raw values
	}
	dest := append(append([]any{&out.base, &out.baseAt, &out.count}, extra...), &seq, msg, &crc)
	found := false
	for rows.Next() {
		if !found {
			// the conversation's columns, the same in every row: once
			err = rows.Scan(dest...)
			b.Store, b.Conv, b.Last = s.name, id, out.count
			for i := range head {
				dest[i] = nil
			}
		} else {
			err = rows.Scan(dest...)
		}
		if err != nil {
			return out, s.explain(doing, err)
		}
		found = true
		if !seq.Valid {
			continue
		}
		if binary {
			raw = b.Copy(rows.RawValues()[head+1])
		}
		r := rowdecode.Row{Seq: int(seq.Int32), Message: raw, CRC: crc.Int64}
		out.rows = append(out.rows, r)
		if decode == 0 {
			decode = r.Seq
		}
		if r.Seq == decode+out.added {
			b.Add(r)
			out.added++
		}
	}
	if err := rows.Err(); err != nil {
		return out, s.explain(doing, err)
	}
	if !found {
		return out, record.NotFound(id)
	}
	return out, nil
}

// decodeRows gives what b (ownRows', which was handed the rows numbered
// from its decode on, up to the first gap) made of conversation id's
// rows, checks that they are numbered from on without a gap, and gives
// the checksum of the last. The first problem in row order is the one
// reported: a row damaged before a gap, then the gap.
func (s *Store) decodeRows(id string, from int, own ownState, rows []rowdecode.Row, b *rowdecode.Batches) ([]history.Message, int64, error) {
	out, err := b.Finish(make([]history.Message, 0, len(rows)))
	if err != nil {
		return nil, 0, err
	}
	for i, r := range rows {
		if seq := from + i; r.Seq != seq {
			return nil, 0, fmt.Errorf("history store %s: conversation %s: message %d is missing (the next one stored is %d): %w", s.name, id, seq, r.Seq, history.ErrDamaged)
		}
	}
	if own.added != len(rows) {
		return nil, 0, fmt.Errorf("history store %s: conversation %s: %d of the %d rows read from message %d on were decoded", s.name, id, own.added, len(rows), from)
	}
	if len(rows) == 0 {
		return out, 0, nil
	}
	return out, rows[len(rows)-1].CRC, nil
}

// remember keeps known's messages followed by fresh as what was read of
// conversation id (last: the checksum of fresh's last row; known.from and
// known.mark as read with them), unless another read kept more of the
// same meanwhile, and returns them with no room to grow: a caller's
// append copies, never writing into the store's memory or another
// caller's slice.
func (s *Store) remember(id string, known read, fresh []history.Message, last int64) []history.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, had := s.read[id]
	same := had && cur.base == known.base && cur.baseAt == known.baseAt
	var all []history.Message
	if len(fresh) == 0 {
		// kept with no room to grow: room past it may be messages an
		// append in place since handed out
		all = known.msgs[:len(known.msgs):len(known.msgs)]
	} else if same && cur.from == known.from && sameList(cur.msgs, known.msgs) {
		all = append(cur.msgs, fresh...) // past every slice handed out: in place while there is room
	} else {
		all = append(known.msgs[:len(known.msgs):len(known.msgs)], fresh...)
	}
	if len(fresh) == 0 {
		last = known.lastCRC
	}
	next := read{msgs: all, from: known.from, base: known.base, baseAt: known.baseAt, lastCRC: last, mark: known.mark}
	if !next.mark.seen && same {
		next.mark = cur.mark // what a Messages read does not look at stays known
	}
	if end, curEnd := next.end(), cur.end(); !same || end > curEnd || end == curEnd && next.from <= cur.from {
		s.read[id] = next
	}
	if all == nil {
		return []history.Message{} // none yet: an empty list, as SQLite gives
	}
	return all[:len(all):len(all)]
}

// sameList reports whether kept and read are one list: the same length
// over the same backing array, so that what follows read's messages in it
// is what follows them in the conversation. Two lists of the same link,
// place and length may be of two moments (a rewind and a rewrite to the
// same length by another process, read meanwhile by another read): the
// fresh rows of the one read go only onto its own list. Empty lists are
// never one (nothing to compare).
func sameList(kept, read []history.Message) bool {
	return len(kept) == len(read) && len(read) > 0 && &kept[0] == &read[0]
}

// Append adds messages in one transaction, after checking the writer's
// claim in it under the conversation's row lock (see history.Store.Append).
// Under history.Lazy it commits without waiting for the server's disk
// (synchronous_commit off): a crash of this process loses nothing, a crash
// of the database server may lose the last such commits.
func (s *Store) Append(ctx context.Context, id string, msgs ...history.Message) error {
	doing := "appending to conversation " + id
	now := s.hostNow()
	seqs := make([]int32, len(msgs))
	raws := make([][]byte, len(msgs))
	crcs := make([]int64, len(msgs))
	results := false
	return s.write(ctx, id, doing, history.IsLazy(ctx), func(tx pgx.Tx, w writeState) error {
		if err := s.counts(doing, w); err != nil {
			return err
		}
		if err := s.allows(ctx, id, w); err != nil {
			return err
		}
		if len(msgs) == 0 {
			return nil
		}
		for i, m := range msgs {
			m.Time = now
			raw, err := history.EncodeMessage(m)
			if err != nil {
				return fmt.Errorf("appending to conversation %s: %w", id, err)
			}
			seq := w.last + 1 + i
			seqs[i], raws[i], crcs[i] = int32(seq), raw, record.MessageChecksum(id, seq, raw)
			for _, p := range m.Parts {
				results = results || p.Type == history.ToolResultPart
			}
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO messages (conversation, seq, message, crc) SELECT $1, * FROM unnest($2::integer[], $3::bytea[], $4::bigint[])`, id, seqs, raws, crcs)
		if results {
			// the round's results are stored: what was kept of it goes
			b.Queue(`DELETE FROM kept WHERE conversation = $1`, id)
		}
		updated := toMicro(now)
		b.Queue(`UPDATE conversations SET updated = $2, updated_crc = $3, messages = messages + $4 WHERE id = $1`, id, updated, updatedChecksum(id, updated), len(msgs))
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return s.explain(doing, err)
		}
		return appendHook(ctx, tx) // tx.go: the workers' queue inserts a turn's job here
	})
}
