package sqlite

// This file is the SQLite store's marks (history.Marker): a row of the
// marks table per marked conversation (layout 7; a table with rowids, its
// facts last, since layout 8: marksV8), written by SetMark under the
// writer's claim and deleted by every write that changes the
// conversation's messages other than by appending (Rewind, Switch,
// Delete); and Marked, which reads the mark and the messages from its
// place on in one read transaction, and keeps them (the store's memory of
// a conversation may start past its first message) — the mark's facts
// too: a later read that finds the mark it keeps in the table reads its
// place and checksums, not its facts (sameMark).

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

var _ history.Marker = (*Store)(nil)

// The statements of the marks (prepared on the store's connection with
// the round's, rawtx.go).
var (
	// the checksum of conversation ?1's own message numbered ?2, noRow
	// where it has none (the message is its base's, or none at all)
	rowCRCSQL = `SELECT COALESCE((SELECT crc FROM messages WHERE conversation = ?1 AND seq = ?2), ` + fmt.Sprint(noRow) + `)`
	// readTag.crc of conversation ?1 at message ?2 (heldCRC)
	heldCRCSQL = `SELECT ` + heldCRC("?1", "?2")
	// a conversation's mark (NULLs: none), and the checksum of its own
	// message at the mark's place now (markColumns, for checkMark): its
	// facts only when the mark is not the one the reader keeps, given
	// as ?2 to ?5 (keptMark.args; sameMark), else NULL (SQLite reads
	// neither the facts, nor, marks' facts being its last column since
	// layout 8, their overflow pages: length() reads the record's header)
	markColumns = `k.start, k.crc, k.row_crc, ` + sameMark + `, CASE WHEN ` + sameMark + ` THEN NULL ELSE k.facts END, COALESCE((SELECT crc FROM messages WHERE conversation = k.conversation AND seq = k.start), ` + fmt.Sprint(noRow) + `)`
	// the mark is the one the reader keeps: its place, checksums and
	// length of facts are those given (keptMark.args)
	sameMark = `(k.start = ?2 AND k.crc = ?3 AND k.row_crc = ?4 AND length(k.facts) = ?5)`
	// a conversation's record as the read whole reads it, and its mark
	markedRecordSQL = `SELECT ` + recordColumnsAsStored + `, ` + markColumns + ` FROM conversations c LEFT JOIN marks k ON k.conversation = c.id WHERE c.id = ?1`
	// a conversation's mark alone (readMarkedThroughBases)
	markSQL = `SELECT ` + markColumns + ` FROM marks k WHERE k.conversation = ?1`
)

const (
	setMarkSQL  = `INSERT OR REPLACE INTO marks (conversation, start, row_crc, crc, facts) VALUES (?, ?, ?, ?, ?)`
	dropMarkSQL = `DELETE FROM marks WHERE conversation = ?`
)

// markChecksum is the checksum of conversation id's mark from place from
// with facts, set over the row whose checksum was rowCRC, kept beside it
// (marks.crc): of the four, so that a mark read under another
// conversation, or with its place, row or facts changed, fails it. "mark"
// opens it, so that no message row (whose checksum is
// record.MessageChecksum's of a like shape) passes for a mark.
func markChecksum(id string, from int, rowCRC int64, facts []byte) int64 {
	head := strconv.AppendInt(append([]byte("mark\x00"+id), 0), int64(from), 10)
	head = strconv.AppendInt(append(head, 0), rowCRC, 10)
	return int64(crc32.Update(crc32.Checksum(append(head, 0), record.Castagnoli()), record.Castagnoli(), facts))
}

// keptMark is a mark as the store keeps it in memory beside the messages
// it read (Store.marks), with its checksum (0 for no mark) and the
// checksum of the row it was set over (marks.row_crc): a read that finds
// the same four in the table (sameMark) takes its facts from here. Four
// that match a mark set since by another process (its checksum colliding
// with this one's: by chance once in 2^32, or made to) hand out these
// facts for it: both were set at the same place over the same row of the
// conversation's own — one append's, whose checksum covers the time it
// was stored —, so both are of the same messages before it, and either
// is true of them. A mark among a fork's base's messages names no row of
// its own (noRow): a read outside the claim reads its facts every time
// (args). Under the claim, an Append keeps the mark it kept only where its
// transaction finds the readTag the store kept (keepAppended): a fork
// remade under its id by another opening, over a base remade too, has
// another tag (its base's row), so what was kept of it, mark and all,
// is read again; one remade over the same base at the same place shares
// the same messages before the mark, and a colliding mark set over them
// is as true of them as the kept one.
type keptMark struct {
	history.Mark
	crc, rowCRC int64
}

// args are k as markColumns' parameters ?2 to ?5 (sameMark): a read of
// the marks gives their facts only where the mark is not k. No mark
// (From 0) is NULLs, which no stored mark is (one stored at place 0 is
// damage, read whole and reported by checkMark).
func (k keptMark) args() []any {
	if k.From == 0 || k.rowCRC == noRow {
		// a mark among a fork's base's messages names no row of its
		// own: its place and checksums do not say which messages stand
		// before it (a fork deleted and made again under its id from
		// another base), so its facts are read at every read
		return []any{nil, nil, nil, nil}
	}
	return []any{k.From, k.crc, k.rowCRC, len(k.Facts)}
}

// markID is what an Append's transaction reads of a conversation's mark:
// its place and checksum (0 and 0: none), to compare with the one kept.
type markID struct {
	from int
	crc  int64
}

// is reports whether k is the mark id names.
func (k keptMark) is(id markID) bool { return k.From == id.from && k.crc == id.crc }

// out is k as handed out: its facts clipped, so that a caller's append
// copies them.
func (k keptMark) out() history.Mark {
	if len(k.Facts) == 0 {
		return history.Mark{From: k.From}
	}
	return history.Mark{From: k.From, Facts: k.Facts[:len(k.Facts):len(k.Facts)]}
}

// storedMark is a mark's columns as read (markColumns): all NULL (same
// false) but rowNow with no mark.
type storedMark struct {
	from, crc, rowCRC sql.NullInt64
	same              sql.NullInt64 // not 0: the mark is the reader's (sameMark), its facts not read
	facts             []byte
	rowNow            int64 // the checksum of the conversation's own row at from now
}

// dest is where a scan puts m's columns, in markColumns' order.
func (m *storedMark) dest() []any {
	return []any{&m.from, &m.crc, &m.rowCRC, &m.same, &m.facts, &m.rowNow}
}

// checkMark is conversation id's mark as read (m), of count messages,
// the reader keeping kept: a mark that fails its checksum is damage,
// reported as any other (the reader would otherwise take facts that are
// not its own for true), and SetMark replaces it without reading it. A
// mark that is the one kept (m.same: its place, checksums and length of
// facts are kept's) was not read whole: it is kept, whose facts were
// checked against that checksum when they were read or set. So facts
// damaged since under their checksum are not noticed by a store that
// keeps them (it hands out the facts it checked, which are the mark's);
// a store that does not (one opened afresh, or after the mark changed)
// reads them and reports it. A whole mark whose place is
// past the conversation's end, or whose row there is not the one it was
// set over, was left by a write that changed the messages before it
// without deleting it — a rewind or switch by a myelin of layout 6 still
// running when the store was brought to 7 (schemaV7) — and is not the
// conversation's: it reads as no mark (every message is read, which is
// always right), not as damage, since nothing was damaged. A row moved
// by a rewind or switch has its checksum rewritten for its new place
// (moveRows), and a message appended in its place is another message, so
// a row still there with its checksum means the messages before it are
// those the mark was set over (as readTag's).
func (s *Store) checkMark(id string, m storedMark, count int, kept keptMark) (keptMark, error) {
	if !m.from.Valid {
		return keptMark{}, nil
	}
	at, same := int(m.from.Int64), m.same.Int64 != 0
	if !same { // the one kept (at its place, above 0) was checked when kept
		if sum := markChecksum(id, at, m.rowCRC.Int64, m.facts); !m.crc.Valid || sum != m.crc.Int64 {
			return keptMark{}, fmt.Errorf("history store %s: the mark of conversation %s is damaged: its place (%d) or facts (%d bytes) no longer match their checksum (stored %08x, now %08x): %w", s.path, id, at, len(m.facts), m.crc.Int64, sum, history.ErrDamaged)
		}
		if at <= 0 {
			return keptMark{}, fmt.Errorf("history store %s: the mark of conversation %s starts at message %d: %w", s.path, id, at, history.ErrDamaged)
		}
	}
	if at > count || m.rowNow != m.rowCRC.Int64 {
		return keptMark{}, nil // left by a rewind or switch that did not delete it
	}
	if same {
		return kept, nil
	}
	facts := m.facts
	if len(facts) == 0 {
		facts = nil
	}
	return keptMark{Mark: history.Mark{From: at, Facts: facts}, crc: m.crc.Int64, rowCRC: m.rowCRC.Int64}, nil
}

// SetMark keeps m as conversation id's mark (see history.Marker), in one
// transaction that checks the writer's claim as Append's does, and that
// does not wait for the disk (as under history.Lazy): a crash of the
// machine may lose it, and every write committed after it, leaving the
// mark before it, which stayed true. Mark{} deletes the mark.
func (s *Store) SetMark(ctx context.Context, id string, m history.Mark) error {
	var facts []byte
	if len(m.Facts) > 0 {
		facts = append([]byte(nil), m.Facts...)
	}
	kept := keptMark{Mark: history.Mark{From: m.From, Facts: facts}}
	doing := fmt.Sprintf("marking conversation %s from message %d", id, m.From)
	var after readTag // the conversation the mark was set over
	// one at a time, so that the marks kept in memory follow the commits;
	// waiting for the slot ends with ctx, as waiting for the write lock
	// does
	select {
	case s.marking <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("history store %s: %s: waiting for another mark to be set: %w", s.path, doing, ctx.Err())
	}
	defer func() { <-s.marking }()
	return s.rawWriteAnd(ctx, doing, true, func(tx rawTx) error {
		var last, appended int
		var cl nullClaim
		var old markID // the mark it replaces (read with the rest, not needed)
		err := tx.queryRow(tx.st.nextSeq, []any{id}, &last, &appended,
			&cl.token, &cl.pid, &cl.host, &cl.node, &cl.since, &cl.expires, &after.base, &after.baseAt, &after.crc, &old.from, &old.crc)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s: %w", doing, record.NotFound(id))
		}
		if err != nil {
			return s.explain(doing, err)
		}
		if last != appended {
			return fmt.Errorf("history store %s: %s: its last message is number %d, but %d were stored in it: %w", s.path, doing, last, appended, history.ErrDamaged)
		}
		after.n = last
		c, ok := cl.row()
		if err := s.claimAllows(ctx, id, c, ok); err != nil {
			return err
		}
		if err := record.CheckMark(id, m.From, len(facts), appended); err != nil {
			return err
		}
		if m.From == 0 {
			if err := tx.exec(tx.st.dropMark, id); err != nil {
				return s.explain(doing, err)
			}
			return nil
		}
		var row int64 // the row the mark is set over (checkMark)
		if err := tx.queryRow(tx.st.rowCRC, []any{id, m.From}, &row); err != nil {
			return s.explain(doing, err)
		}
		kept.crc, kept.rowCRC = markChecksum(id, m.From, row, facts), row
		if err := tx.exec(tx.st.setMark, id, m.From, row, kept.crc, append([]byte{}, facts...)); err != nil { // NOT NULL: empty, not nil
			return s.explain(doing, err)
		}
		return nil
	}, func() { s.markSet(id, after, kept) })
}

// markSet keeps mark k, just committed by SetMark over the conversation id
// as after says, with what the store keeps of id when that is the same
// conversation; else what is kept of id keeps no mark (the next Marked
// reads it).
func (s *Store) markSet(id string, after readTag, k keptMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markGen++ // a read begun before keeps no mark it read
	cur, ok := s.read[id]
	if !ok {
		return
	}
	if s.start[id]+len(cur)+len(s.undecoded[id]) == after.n && s.tags[id] == after {
		s.marks[id] = k
		return
	}
	delete(s.marks, id)
}

// ownMarked is ownMessages for Marked: the mark kept of conversation id
// and the messages kept from its place on, when the writer of ctx
// appended to it last (keepAppended) and the mark is known (Store.marks):
// under the claim nobody else sets it, and what this store sets it keeps
// (markSet). ok is false when a read must go to the store.
func (s *Store) ownMarked(ctx context.Context, id string) (m history.Mark, msgs []history.Message, ok bool) {
	w, writing := history.WriterOf(ctx)
	if !writing {
		return m, nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token, marked := s.own[id]; !marked || token != w.Token {
		return m, nil, false
	}
	if s.settle(id); s.own[id] != w.Token {
		return m, nil, false // dropped: a kept message did not decode
	}
	cur, kept := s.read[id]
	k, known := s.marks[id]
	start := s.start[id]
	if !kept || !known || k.From < start || k.From > start+len(cur) {
		return m, nil, false
	}
	s.usedLocked(id)
	cur = cur[:len(cur):len(cur)]
	return k.out(), cur[k.From-start:], true
}

// Marked returns conversation id's mark and its messages from the mark's
// place on (see history.Marker): under the claim of the writer that
// appended to it last through this store, what the store keeps, without
// a query (ownMarked); else, in one read transaction, the mark and the
// rows after those kept (or, with none kept from before the mark's
// place, the rows from it on), which the store then keeps. The mark's
// facts are read only when the mark is not the one kept (its place,
// checksums or length of facts differ: sameMark, checkMark), so that a
// store whose conversation another process appended to does not read
// them again (22 MB of the agent's pack). A row lost
// before the mark's place is not looked for (Get and Messages count
// the rows); every row read is checked as Messages checks it, and for
// each conversation it reads rows from — the fork's bases too, where the
// mark's place is among their messages — a row numbered at or below the
// conversation's base_at, or past its count of messages appended, or one
// missing among those it reads (or, in the conversation marked, after
// them), is damage (history.ErrDamaged). A base's rows past the fork's
// point, which the fork does not hold, are not counted (countLevel
// checks the base's last row only): Messages of the base reports those.
func (s *Store) Marked(ctx context.Context, id string) (history.Mark, []history.Message, error) {
	if m, msgs, ok := s.ownMarked(ctx, id); ok {
		return m, msgs, nil
	}
	s.mu.Lock()
	s.settle(id)
	known, kept := s.read[id]
	start, tag, gen, mark := s.start[id], s.tags[id], s.markGen, s.marks[id]
	s.mu.Unlock()
	r, err := s.readMarked(ctx, id, kept, start, known, tag, mark)
	moved := r.moved
	if errors.Is(err, errThroughBases) {
		r, err = s.readMarkedThroughBases(ctx, id, mark)
	}
	if errors.Is(err, history.ErrNotFound) {
		s.forget(id) // deleted: one made again under its id starts empty
	}
	if moved {
		// as Messages drops it (errMoved): else a read that reaches
		// less far than the stale messages keeps nothing (keep), and
		// every Marked after reads the conversation again
		s.dropRead(id)
	}
	if err != nil {
		return history.Mark{}, nil, err
	}
	if afterMarkedRead != nil {
		afterMarkedRead(id)
	}
	msgs := s.keep(id, r.start, r.known, r.fresh, r.tag, &r.mark, gen)
	return r.mark.out(), msgs[r.mark.From-r.start:], nil
}

// afterMarkedRead, when not nil (tests only), is called by Marked between
// its read's transaction and keeping what it read, where this store's own
// writes may commit.
var afterMarkedRead func(id string)

// markedRead is what a read of Marked found: the mark, and the messages
// from place start, known (what was kept of them) followed by fresh,
// with the readTag at their end.
type markedRead struct {
	mark         keptMark
	start        int
	known, fresh []history.Message
	tag          readTag
	// what the store kept was found moved (a rewind or switch, or the
	// conversation made again, by another opening): dropped before what
	// was read is kept, which may reach less far
	moved bool
}

// errThroughBases is readMarked's when the messages from the mark's place
// on begin among those a fork shares with its base:
// readMarkedThroughBases reads them.
var errThroughBases = errors.New("the mark's place is among the messages of a base")

// readMarked is Marked's read, in one read transaction on a reader
// connection (rawRead): conversation id's record and mark (markedRecordSQL; its
// facts only where it is not mark, the one kept), then
// its rows after the known ones kept from place start (when kept, and
// start is not past the mark's place), checked against the kept tag;
// where they moved since (a rewind or switch), or nothing fit is kept,
// its rows from the mark's place on, stepped as Messages steps them.
func (s *Store) readMarked(ctx context.Context, id string, kept bool, start int, known []history.Message, tag readTag, mark keptMark) (r markedRead, err error) {
	doing := "reading conversation " + id + " from its mark"
	err = s.rawRead(ctx, doing, func(tx rawTx) error {
		var stored storedMark
		c, err := s.scanConversation(rawRow{tx: tx, st: tx.st.markedRecord, args: append([]any{id}, mark.args()...), extra: stored.dest()})
		if errors.Is(err, sql.ErrNoRows) {
			return record.NotFound(id)
		}
		if errors.Is(err, history.ErrDamaged) {
			return err
		}
		if err != nil {
			return s.explain(doing, err)
		}
		if r.mark, err = s.checkMark(id, stored, c.Messages, mark); err != nil {
			return err
		}
		if whileMarking != nil {
			whileMarking(id)
		}
		if kept && start <= r.mark.From {
			end := start + len(known)
			now := readTag{n: end}
			fresh, moved, err := s.readTail(tx, id, end, &now, c.Messages, nil, &tag)
			if err != nil {
				return err
			}
			if !moved {
				r.start, r.known, r.fresh, r.tag = start, known, fresh, now
				return nil
			}
			// moved since it was kept: read afresh, in this transaction
			r.moved = true
		}
		if r.mark.From < c.BaseAt {
			return errThroughBases
		}
		n := c.Messages - r.mark.From
		r.tag = readTag{n: r.mark.From}
		r.start = r.mark.From
		r.fresh, _, err = s.readTail(tx, id, r.mark.From, &r.tag, c.Messages, make([]history.Message, 0, n+n/8+64), nil)
		return err
	})
	return r, err
}

// readTail steps conversation id's own rows after its first after in tx
// (readTaggedOn), tag's n at after, and returns them decoded appended to
// dst, with tag at their end; size is its count of messages. With was
// not nil, the rows are taken only while tag is as was (moved: they are
// not). Each row is checked and counted as messagesOnce checks them.
func (s *Store) readTail(tx rawTx, id string, after int, tag *readTag, size int, dst []history.Message, was *readTag) (msgs []history.Message, moved bool, err error) {
	d := newRowDecoder(s, id, size)
	got, scanErr := s.readTaggedOn(tx, id, after, tag, d)
	msgs, decodeErr := d.Finish(dst)
	switch {
	case scanErr != nil:
		if errors.Is(scanErr, history.ErrDamaged) {
			return nil, false, scanErr
		}
		return nil, false, s.explain("reading conversation "+id, scanErr)
	case !got.found:
		// its record was read in this transaction: not gone, damaged
		return nil, false, fmt.Errorf("history store %s: conversation %s has no record of its own: %w", s.path, id, history.ErrDamaged)
	case got.below > 0:
		return nil, false, fmt.Errorf("history store %s: conversation %s holds %d rows numbered %d or below, where its own are numbered from %d: %w", s.path, id, got.below, tag.baseAt, tag.baseAt+1, history.ErrDamaged)
	case was != nil && *tag != *was:
		return nil, true, nil
	case after+got.rows != got.appended:
		return nil, false, fmt.Errorf("history store %s: conversation %s holds %d messages, but %d were stored in it: %w", s.path, id, after+got.rows, got.appended, history.ErrDamaged)
	case decodeErr != nil:
		return nil, false, decodeErr
	case got.missing != nil:
		return nil, false, got.missing
	}
	if d.last > 0 {
		tag.n, tag.crc = d.last, d.lastCRC
	}
	return msgs, false, nil
}

// readMarkedThroughBases is Marked's read where the mark's place is among
// the messages conversation id shares with its base (a fork, or a branch,
// marked before its own messages begin), or id has no mark and shares
// some: in one read transaction, its record, its mark (its facts only
// where it is not mark, the one kept), the chain of its
// bases and each one's rows from the mark's place on, as MessagesBetween
// reads them (through database/sql: a fork's first read only), each
// conversation read from checked as Messages counts it (countLevel), and
// the readTag at its end, so that the store keeps them as it keeps a read
// whole.
func (s *Store) readMarkedThroughBases(ctx context.Context, id string, mark keptMark) (r markedRead, err error) {
	doing := "reading conversation " + id + " from its mark"
	tx, err := s.readDB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return r, s.explain(doing, err)
	}
	defer tx.Rollback()
	top, ok, err := s.readLink(ctx, tx, id)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, record.NotFound(id)
	}
	var stored storedMark
	err = tx.QueryRowContext(ctx, markSQL, append([]any{id}, mark.args()...)...).Scan(stored.dest()...)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return r, s.explain(doing, err)
	}
	if r.mark, err = s.checkMark(id, stored, top.count, mark); err != nil {
		return r, err
	}
	levels, err := s.chain(ctx, tx, top)
	if err != nil {
		return r, err
	}
	n := top.count - r.mark.From
	out, err := s.levelRows(ctx, tx, levels, r.mark.From, top.count, make([]history.Message, 0, n+n/8+64), true)
	if err != nil {
		return r, err
	}
	// the tag selectNewTagged would give at its end
	r.tag = readTag{n: top.count, base: top.base, baseAt: top.baseAt}
	if err := tx.QueryRowContext(ctx, heldCRCSQL, id, top.count).Scan(&r.tag.crc); err != nil {
		return r, s.explain(doing, err)
	}
	r.start, r.fresh = r.mark.From, out
	return r, nil
}

// countLevelSQL counts conversation ?1's own rows numbered at or below
// ?2 (its base_at: none of its own are), and gives the highest number of
// its rows (0: none): two searches of the messages' key, walking no rows.
const countLevelSQL = `SELECT (SELECT COUNT(*) FROM messages WHERE conversation = ?1 AND seq <= ?2), (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation = ?1)`

// countLevel checks, in tx, the rows of level l of a chain, the read
// having taken its rows from some place up to l.lim (rowsBetween: each
// there, in order), as Messages counts a conversation's rows
// (messagesOnce, readTail): none numbered at or below its base_at, and
// none past its count of messages appended, its last there — a row added
// behind the store's back past its count, or where its own cannot be, is
// damage. For the conversation read (l.lim is its count) that is the
// count Messages checks of the rows after the read's first; for a base,
// a row lost between the place its fork shares its rows to and its end
// (not the fork's, and not read) is not looked for, as no row before the
// read's first is (Marked's doc): counting them walked every one of them
// (~10 ms at 50,000, a fork's first read of its mark).
func (s *Store) countLevel(ctx context.Context, tx *sql.Tx, l level) error {
	var below, last int
	if err := tx.QueryRowContext(ctx, countLevelSQL, l.id, l.baseAt).Scan(&below, &last); err != nil {
		return s.explain("counting the messages of conversation "+l.id, err)
	}
	if below > 0 {
		return fmt.Errorf("history store %s: conversation %s holds %d rows numbered %d or below, where its own are numbered from %d: %w", s.path, l.id, below, l.baseAt, l.baseAt+1, history.ErrDamaged)
	}
	want := l.count
	if l.count == l.baseAt {
		want = 0 // no row of its own
	}
	if last != want {
		return fmt.Errorf("history store %s: conversation %s holds rows numbered to %d, but %d messages were stored in it: %w", s.path, l.id, last, l.count, history.ErrDamaged)
	}
	return nil
}

// rawRow is the row of statement st of tx run with args, as a scanner:
// dest, then extra, scanned from its columns.
type rawRow struct {
	tx          rawTx
	st          sqldriver.Stmt
	args, extra []any
}

// Scan scans the row's columns into dest followed by r.extra.
func (r rawRow) Scan(dest ...any) error {
	return r.tx.queryRow(r.st, r.args, append(dest, r.extra...)...)
}

// rawRead runs fn in a read transaction on a reader connection (BEGIN,
// deferred: it takes no lock but WAL's snapshot, taken at its first
// read), then ends it, whatever becomes of ctx.
func (s *Store) rawRead(ctx context.Context, doing string, fn func(tx rawTx) error) error {
	c, err := s.readDB().Conn(ctx)
	if err != nil {
		return s.explain(doing, err)
	}
	defer c.Close()
	var fnErr error
	err = c.Raw(func(dc any) error {
		st, err := s.rawPrepared(ctx, dc)
		if err != nil {
			return err
		}
		tx := rawTx{ctx: ctx, st: st}
		end := rawTx{ctx: context.WithoutCancel(ctx), st: st}
		if err := tx.exec(st.beginRead); err != nil {
			return errors.Join(err, end.rollBack()) // a BEGIN reported failed may have run
		}
		fnErr = fn(tx)
		return end.rollBack()
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return s.explain(doing, err)
	}
	return nil
}

// whileMarking, when not nil (tests only), is called by Marked's read
// between its record's statement and its rows', inside its read
// transaction: this store's own writes may commit there, after the
// read's snapshot.
var whileMarking func(id string)
