package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
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
const recordColumns = `c.id, c.system, c.created, c.updated, (SELECT count(*) FROM messages m WHERE m.conversation = c.id), c.messages, c.crc, c.parent, c.parent_call, c.updated_crc`

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
// its checksums and its count of messages.
func (s *Store) scanConversation(row pgx.Row) (history.Conversation, error) {
	var c history.Conversation
	var system []byte
	var created string
	var stored int64
	var appended int
	var crc, updatedCRC int64
	if err := row.Scan(&c.ID, &system, &created, &c.Updated, &stored, &appended, &crc, &c.Parent, &c.ParentCall, &updatedCRC); err != nil {
		return c, err
	}
	c.System = string(system)
	c.Messages, c.Updated = int(stored), c.Updated.UTC()
	if sum := record.RecordChecksum(c.ID, c.System, created, c.Parent, c.ParentCall); sum != crc {
		return c, fmt.Errorf("history store %s: the record of conversation %s is damaged: its id, system prompt, creation time or parent no longer match their checksum (stored %08x, now %08x): %w", s.name, c.ID, crc, sum, history.ErrDamaged)
	}
	if sum := updatedChecksum(c.ID, c.Updated); sum != updatedCRC {
		return c, fmt.Errorf("history store %s: the record of conversation %s is damaged: its last update time (%s) no longer matches its checksum (stored %08x, now %08x): %w", s.name, c.ID, c.Updated.Format(record.TimeFormat), updatedCRC, sum, history.ErrDamaged)
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

// List returns the conversations, most recently updated first.
func (s *Store) List(ctx context.Context) ([]history.Conversation, error) {
	return s.records(ctx, "listing conversations", `SELECT `+recordColumns+` FROM conversations c ORDER BY c.updated DESC, c.id`)
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

// Messages returns a conversation's messages in order, reading only those
// stored since its last read (see history.Store.Messages). The slice and
// the messages in it are shared with the store's memory: callers must not
// modify them.
func (s *Store) Messages(ctx context.Context, id string) ([]history.Message, error) {
	s.mu.Lock()
	known := s.read[id]
	s.mu.Unlock()
	size := len(known)
	if size == 0 {
		c, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		size = c.Messages
	}
	doing := "reading conversation " + id
	rows, err := s.pool.Query(ctx, `SELECT seq, message, crc FROM messages WHERE conversation = $1 AND seq > $2 ORDER BY seq`, id, len(known))
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer rows.Close()
	fresh := make([]history.Message, 0, max(size-len(known), 0))
	for seq := len(known) + 1; rows.Next(); seq++ {
		var stored int
		var raw []byte
		var crc int64
		if err := rows.Scan(&stored, &raw, &crc); err != nil {
			return nil, s.explain(doing, err)
		}
		if stored != seq {
			return nil, fmt.Errorf("history store %s: conversation %s: message %d is missing (the next one stored is %d): %w", s.name, id, seq, stored, history.ErrDamaged)
		}
		if sum := record.MessageChecksum(id, seq, raw); sum != crc {
			return nil, fmt.Errorf("history store %s: conversation %s, message %d is damaged: its bytes no longer match their checksum (stored %08x, now %08x): %w", s.name, id, seq, crc, sum, history.ErrDamaged)
		}
		m, err := history.DecodeMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("history store %s: conversation %s, message %d is not valid: %w", s.name, id, seq, err)
		}
		fresh = append(fresh, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain(doing, err)
	}
	if len(fresh) == 0 && len(known) > 0 {
		// nothing new, and the record not read (it was, when nothing was
		// known): a conversation deleted since by another process is
		// not found, not served from memory. A read past known is the
		// common one (Append keeps nothing in memory), and stays one
		// query, ordered by the index.
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1`, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			s.forget(id)
			return nil, record.NotFound(id)
		}
		if err != nil {
			return nil, s.explain(doing, err)
		}
	}
	if n := len(known) + len(fresh); n < size {
		return nil, fmt.Errorf("history store %s: conversation %s: messages %d to %d are missing (%d stored): %w", s.name, id, n+1, size, size, history.ErrDamaged)
	}
	return s.remember(id, known, fresh), nil
}

// remember keeps known followed by fresh as what was read of conversation
// id, unless another read kept more meanwhile, and returns them with no
// room to grow: a caller's append copies, never writing into the store's
// memory or another caller's slice.
func (s *Store) remember(id string, known, fresh []history.Message) []history.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.read[id]
	var all []history.Message
	if len(fresh) == 0 {
		all = known
	} else if len(cur) == len(known) && len(known) > 0 {
		all = append(cur, fresh...) // past every slice handed out: in place while there is room
	} else {
		all = append(known[:len(known):len(known)], fresh...)
	}
	if len(all) > len(cur) {
		s.read[id] = all
	}
	if all == nil {
		return []history.Message{} // none yet: an empty list, as SQLite gives
	}
	return all[:len(all):len(all)]
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
		if w.last != w.appended {
			return fmt.Errorf("history store %s: %s: its last message is number %d, but %d were stored in it: %w", s.name, doing, w.last, w.appended, history.ErrDamaged)
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
