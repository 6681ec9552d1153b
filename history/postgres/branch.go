package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// This file is the store's forks and branches (history.Brancher,
// docs/branches.md), kept in four columns of layout 5 on the conversation
// record: base and base_at (its first base_at messages are base's, its own
// rows numbered from base_at+1), branch_of, and base_crc, their checksum.
// Its messages column counts the shared messages too, so the checks every
// write makes (the last row's number is the count) hold for a fork.
//
// Locks: a Fork locks FOR SHARE the record of the conversation that holds
// its first messages (its base, or the one further up it names instead);
// a Rewind or Switch locks the rewound conversation's FOR UPDATE (as every
// write does), then the records of the conversations sharing its
// messages, which it points elsewhere. So a fork and a rewind of the
// conversation it names happen one after the other, and a fork never
// names messages a rewind has moved.

var _ history.Brancher = (*Store)(nil)

// checkBase is the check of a record's link to the messages it shares
// against base_crc.
func (s *Store) checkBase(id, base string, baseAt int, branchOf string, crc int64) error {
	if sum := record.BaseChecksum(id, base, baseAt, branchOf); sum != crc {
		return fmt.Errorf("history store %s: the record of conversation %s is damaged: the messages it shares (base %q, base_at %d, branch_of %q) no longer match their checksum (stored %08x, now %08x): %w",
			s.name, id, base, baseAt, branchOf, crc, sum, history.ErrDamaged)
	}
	return nil
}

// link is what a fork, rewind or switch reads of a conversation's record.
type link struct {
	id, base, branchOf string
	baseAt, count      int
	system             []byte
}

// readLink reads conversation id's record in tx, locked as lock says
// ("FOR SHARE", "FOR UPDATE" or ""), its link checked; found is false for
// a conversation not in the store.
func (s *Store) readLink(ctx context.Context, tx pgx.Tx, id, lock string) (l link, found bool, err error) {
	var crc int64
	err = tx.QueryRow(ctx, `SELECT id, base, base_at, branch_of, messages, system, base_crc FROM conversations WHERE id = $1 `+lock, id).
		Scan(&l.id, &l.base, &l.baseAt, &l.branchOf, &l.count, &l.system, &crc)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, s.explain("reading conversation "+id, err)
	}
	return l, true, s.checkBase(l.id, l.base, l.baseAt, l.branchOf, crc)
}

// up reads, in tx, the record of the conversation l shares its first
// messages with (locked as lock says), which must be there.
func (s *Store) up(ctx context.Context, tx pgx.Tx, l link, lock string, depth int) (link, error) {
	if depth > maxChain {
		return link{}, fmt.Errorf("history store %s: conversation %s: its first messages are shared through more than %d conversations (a loop): %w", s.name, l.id, maxChain, history.ErrDamaged)
	}
	b, found, err := s.readLink(ctx, tx, l.base, lock)
	if err != nil {
		return b, err
	}
	if !found {
		return b, fmt.Errorf("history store %s: conversation %s shares its first %d messages with conversation %s, which is not in the store: %w", s.name, l.id, l.baseAt, l.base, history.ErrDamaged)
	}
	return b, nil
}

// Fork creates conversation c sharing the first c.BaseAt messages of
// c.Base, in one transaction that writes one record whatever their number
// (see history.Brancher.Fork). A point inside what the base itself shares
// names the conversation further up that holds them, so a chain of forks
// is read through no more conversations than it must.
func (s *Store) Fork(ctx context.Context, c history.Conversation) (history.Conversation, error) {
	if err := record.CheckFork(c.ID, c.Base, c.BaseAt, c.BranchOf, c.Parent, c.ParentCall); err != nil {
		return c, err
	}
	if c.Created.IsZero() {
		c.Created = s.hostNow()
	}
	var out history.Conversation
	err := retrying(ctx, func() (err error) { out, err = s.fork(ctx, c); return err })
	if err != nil {
		return history.Conversation{}, err
	}
	s.forget(c.ID) // what a read of a deleted conversation of this id kept meanwhile
	return out, nil
}

// fork is Fork's transaction. It locks (FOR SHARE) only the record of the
// conversation that holds the fork's first messages, found first without a
// lock and found again once it is held: a rewind up the chain meanwhile,
// which points the records below it elsewhere, is seen, and the search
// done again. Holding one lock, a fork never deadlocks with a rewind,
// which locks its conversation, then those sharing it.
func (s *Store) fork(ctx context.Context, c history.Conversation) (history.Conversation, error) {
	doing := "forking conversation " + c.Base + " into " + c.ID
	tx, err := s.pool.BeginTx(ctx, readCommitted)
	if err != nil {
		return c, s.explain(doing, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var b link
	for try := 0; ; try++ {
		first, err := s.holder(ctx, tx, c)
		if err != nil {
			return c, err
		}
		locked, _, err := s.readLink(ctx, tx, first.id, "FOR SHARE")
		if err != nil {
			return c, err
		}
		if first.id == c.Base && c.BaseAt <= locked.count && (c.BaseAt > locked.baseAt || locked.base == "") && (c.System == "" || c.System == string(locked.system)) {
			b = locked // the base itself, as it is now: still holding them
			break
		}
		if b, err = s.holder(ctx, tx, c); err != nil {
			return c, err
		}
		if b.id == first.id {
			break
		}
		if try == 10 {
			return c, fmt.Errorf("history store %s: %s: the conversations holding its messages kept being rewound: try again", s.name, doing)
		}
	}
	if c.Parent != "" {
		var parent bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1)`, c.Parent).Scan(&parent); err != nil {
			return c, s.explain(doing, err)
		}
		if !parent {
			return c, record.NoParent(c.ID, c.Parent)
		}
	}
	c.System, c.Created, c.Base = string(b.system), c.Created.UTC(), b.id
	c.Updated, c.Messages = toMicro(c.Created), c.BaseAt
	created := c.Created.Format(record.TimeFormat)
	tag, err := tx.Exec(ctx, `INSERT INTO conversations (id, system, created, updated, messages, crc, parent, parent_call, updated_crc, base, base_at, base_crc)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
		c.ID, []byte(c.System), created, c.Updated, c.BaseAt, record.RecordChecksum(c.ID, c.System, created, c.Parent, c.ParentCall),
		c.Parent, c.ParentCall, updatedChecksum(c.ID, c.Updated), c.Base, c.BaseAt, record.BaseChecksum(c.ID, c.Base, c.BaseAt, ""))
	if err != nil {
		return c, s.explain(doing, err)
	}
	if tag.RowsAffected() == 0 {
		return c, fmt.Errorf("%s: %w (another process may have created it at the same moment)", doing, history.ErrExists)
	}
	if err := tx.Commit(ctx); err != nil {
		return c, s.explain("committing: "+doing, err)
	}
	return c, nil // as Get reads it back
}

// holder reads, in tx, the record of the conversation that holds the
// first c.BaseAt messages of c.Base: c.Base, or the one further up it
// shares them with; c.Base must be there, hold them, and have c.System
// (when given) as its own, which the link returned carries.
func (s *Store) holder(ctx context.Context, tx pgx.Tx, c history.Conversation) (link, error) {
	b, found, err := s.readLink(ctx, tx, c.Base, "")
	if err != nil {
		return b, err
	}
	system := b.system
	if !found {
		return b, record.NoBase(c.ID, c.Base)
	}
	if c.BaseAt > b.count {
		return b, record.BaseTooShort(c.ID, c.Base, c.BaseAt, b.count)
	}
	if c.System != "" && c.System != string(b.system) {
		return b, record.ForkSystem(c.ID, c.Base)
	}
	for depth := 0; c.BaseAt <= b.baseAt && b.base != ""; depth++ {
		if b, err = s.up(ctx, tx, b, "", depth); err != nil {
			return b, err
		}
	}
	b.system = system // the fork's: its base's, whichever holds the messages
	return b, nil
}

// Branches returns the branches of conversation id, oldest first (see
// history.Brancher.Branches).
func (s *Store) Branches(ctx context.Context, id string) ([]history.Conversation, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	out, err := s.records(ctx, "listing the branches of conversation "+id, `SELECT `+recordColumns+` FROM conversations c WHERE c.branch_of = $1`, id)
	history.SortChildren(out) // by creation, then id
	if out == nil && err == nil {
		out = []history.Conversation{}
	}
	return out, err
}

// Rewind takes conversation id back to its first at messages, as a write
// of id under its claim (see history.Brancher.Rewind): in one
// transaction, under id's row lock, its rows after at move to a new
// branch record, their checksums rewritten for it; every other
// conversation sharing id's messages past at is pointed at the branch,
// which holds the same; its kept results go to the branch too, and its
// mark is dropped (the branch starts without one).
func (s *Store) Rewind(ctx context.Context, id string, at int) (history.Conversation, error) {
	doing := fmt.Sprintf("rewinding conversation %s to message %d", id, at)
	now := s.hostNow()
	var branch string
	err := s.write(ctx, id, doing, false, func(tx pgx.Tx, w writeState) error {
		if err := s.allows(ctx, id, w); err != nil {
			return err
		}
		if err := s.counts(doing, w); err != nil {
			return err
		}
		if err := record.CheckRewind(id, at, w.appended); err != nil {
			return err
		}
		me, _, err := s.readLink(ctx, tx, id, "")
		if err != nil {
			return err
		}
		if branch, err = s.branchName(ctx, tx, id); err != nil {
			return err
		}
		// the branch holds what id held: its first at messages are id's
		// (or, before id's own rows start, id's base's), the rest moved
		base, baseAt := id, at
		if at < me.baseAt {
			base, baseAt = me.base, me.baseAt
		}
		created := now.UTC().Format(record.TimeFormat)
		updated := toMicro(now)
		if _, err := tx.Exec(ctx, `INSERT INTO conversations (id, system, created, updated, messages, crc, updated_crc, base, base_at, branch_of, base_crc)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			branch, me.system, created, updated, me.count, record.RecordChecksum(branch, string(me.system), created, "", ""),
			updatedChecksum(branch, updated), base, baseAt, id, record.BaseChecksum(branch, base, baseAt, id)); err != nil {
			return s.explain(doing, err)
		}
		if err := s.moveRows(ctx, tx, id, branch, at, false); err != nil {
			return err
		}
		if err := s.repoint(ctx, tx, map[string]string{id: branch}, at, id, branch); err != nil {
			return err
		}
		keptAt := min(me.baseAt, at)
		if _, err := tx.Exec(ctx, `UPDATE conversations SET messages = $2, base_at = $3, base_crc = $4, updated = $5, updated_crc = $6 WHERE id = $1`,
			id, at, keptAt, record.BaseChecksum(id, me.base, keptAt, me.branchOf), updated, updatedChecksum(id, updated)); err != nil {
			return s.explain(doing, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE kept SET conversation = $2 WHERE conversation = $1`, id, branch); err != nil {
			return s.explain(doing, err)
		}
		// its mark was set over messages it no longer holds (marks.go)
		if _, err := tx.Exec(ctx, `DELETE FROM conversation_marks WHERE conversation = $1`, id); err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
	if err != nil {
		return history.Conversation{}, err
	}
	s.forget(id)
	return s.Get(ctx, branch)
}

// branchName is the id of conversation id's next branch: id~n, n one
// more than its branches (or the first such id not taken).
func (s *Store) branchName(ctx context.Context, tx pgx.Tx, id string) (string, error) {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM conversations WHERE branch_of = $1`, id).Scan(&n); err != nil {
		return "", s.explain("naming a branch of conversation "+id, err)
	}
	for n++; ; n++ {
		name := id + "~" + strconv.Itoa(n)
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1)`, name).Scan(&taken); err != nil {
			return "", s.explain("naming a branch of conversation "+id, err)
		}
		if !taken {
			return name, nil
		}
	}
}

// moveRows moves conversation from's rows numbered after after to
// conversation to, under the same numbers (negated, when negate: a switch
// moves both ways and puts them right after, flip), each row's checksum
// checked and rewritten for its new conversation.
func (s *Store) moveRows(ctx context.Context, tx pgx.Tx, from, to string, after int, negate bool) error {
	doing := fmt.Sprintf("moving the messages of conversation %s after %d to %s", from, after, to)
	rows, err := tx.Query(ctx, `SELECT seq, message, crc FROM messages WHERE conversation = $1 AND seq > $2 ORDER BY seq`, from, after)
	if err != nil {
		return s.explain(doing, err)
	}
	var seqs []int32
	var crcs []int64
	for rows.Next() {
		var r storedRow
		if err := rows.Scan(&r.seq, &r.raw, &r.crc); err != nil {
			rows.Close()
			return s.explain(doing, err)
		}
		if sum := record.MessageChecksum(from, r.seq, r.raw); sum != r.crc {
			rows.Close()
			return fmt.Errorf("history store %s: %s: message %d is damaged: its bytes no longer match their checksum (stored %08x, now %08x): %w", s.name, doing, r.seq, r.crc, sum, history.ErrDamaged)
		}
		seqs, crcs = append(seqs, int32(r.seq)), append(crcs, record.MessageChecksum(to, r.seq, r.raw))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.explain(doing, err)
	}
	if len(seqs) == 0 {
		return nil
	}
	sign := 1
	if negate {
		sign = -1
	}
	if _, err := tx.Exec(ctx, `UPDATE messages m SET conversation = $2, seq = v.seq * $5, crc = v.crc FROM unnest($3::integer[], $4::bigint[]) AS v(seq, crc)
		WHERE m.conversation = $1 AND m.seq = v.seq`, from, to, seqs, crcs, sign); err != nil {
		return s.explain(doing, err)
	}
	return nil
}

// repoint points every conversation sharing more than after messages of
// a conversation in to (a key) at the one to names, which holds the same
// messages, leaving the records of skip alone; each record's link is
// checked and its checksum rewritten. Its UPDATE names base and base_crc
// only: one naming base_at drops the conversation's mark (layout 8's
// trigger), and a conversation repointed keeps its messages and its mark.
func (s *Store) repoint(ctx context.Context, tx pgx.Tx, to map[string]string, after int, skip ...string) error {
	froms := make([]string, 0, len(to))
	for from := range to {
		froms = append(froms, from)
	}
	doing := fmt.Sprintf("pointing the conversations sharing %v past message %d at what holds those messages now", froms, after)
	rows, err := tx.Query(ctx, `SELECT id, base, base_at, branch_of, base_crc FROM conversations WHERE base = ANY($1) AND base_at > $2 AND NOT id = ANY($3) FOR UPDATE`, froms, after, skip)
	if err != nil {
		return s.explain(doing, err)
	}
	var ids, bases []string
	var crcs []int64
	for rows.Next() {
		var l link
		var crc int64
		if err := rows.Scan(&l.id, &l.base, &l.baseAt, &l.branchOf, &crc); err != nil {
			rows.Close()
			return s.explain(doing, err)
		}
		if err := s.checkBase(l.id, l.base, l.baseAt, l.branchOf, crc); err != nil {
			rows.Close()
			return err
		}
		ids, bases, crcs = append(ids, l.id), append(bases, to[l.base]), append(crcs, record.BaseChecksum(l.id, to[l.base], l.baseAt, l.branchOf))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.explain(doing, err)
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE conversations c SET base = v.base, base_crc = v.crc FROM unnest($1::text[], $2::text[], $3::bigint[]) AS v(id, base, crc) WHERE c.id = v.id`, ids, bases, crcs); err != nil {
		return s.explain(doing, err)
	}
	return nil
}

// segment is messages lo to hi of a conversation, stored as rows of
// conversation in.
type segment struct {
	in     string
	lo, hi int
}

// segments are where conversation l's messages are stored, first to
// last, read up its chain in tx.
func (s *Store) segments(ctx context.Context, tx pgx.Tx, l link) ([]segment, error) {
	var out []segment
	hi := l.count
	for depth := 0; hi > 0; depth++ {
		if l.baseAt < hi {
			out = append(out, segment{l.id, l.baseAt + 1, hi})
			hi = l.baseAt
		}
		if hi == 0 || l.base == "" {
			break
		}
		var err error
		if l, err = s.up(ctx, tx, l, "", depth); err != nil {
			return nil, err
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// parting is how many first messages a and b (segments) share: stored in
// the same rows.
func parting(a, b []segment) int {
	p := 0
	for i, j := 0, 0; i < len(a) && j < len(b) && a[i].in == b[j].in; {
		p = min(a[i].hi, b[j].hi)
		if a[i].hi == p {
			i++
		}
		if b[j].hi == p {
			j++
		}
	}
	return p
}

// onChain reports whether conversation id is l's base or further up its
// chain.
func (s *Store) onChain(ctx context.Context, tx pgx.Tx, l link, id string) (bool, error) {
	for depth := 0; l.base != ""; depth++ {
		if l.base == id {
			return true, nil
		}
		var err error
		if l, err = s.up(ctx, tx, l, "", depth); err != nil {
			return false, err
		}
	}
	return false, nil
}

// takes is how conversation z takes, after message p, what conversation
// o held: its new link, and the messages of o's chain (p to copyTo) it
// must hold as rows of its own, as o's base could not be named.
type takes struct {
	base   string
	baseAt int
	copyTo int // 0: none
}

// taking decides how z takes o's messages after p: o's own rows after p
// always move to z; when o shares messages past p with its base, z names
// that base too, if its own first p messages are its base's and that base
// does not lead back to z, else it holds copies of them.
func (s *Store) taking(ctx context.Context, tx pgx.Tx, z, o link, p int) (takes, error) {
	keep := takes{base: z.base, baseAt: z.baseAt}
	if z.baseAt > p {
		keep.baseAt = p // z's first p messages, from the base that held more
	}
	if o.baseAt <= p {
		return keep, nil
	}
	if keep.baseAt == p {
		loop, err := s.onChain(ctx, tx, o, z.id)
		if err != nil {
			return keep, err
		}
		if !loop && o.base != z.id {
			return takes{base: o.base, baseAt: o.baseAt}, nil
		}
	}
	keep.copyTo = o.baseAt
	return keep, nil
}

// Switch makes conversation id continue as its branch does after the
// point where they part, as a write of id under its claim (see
// history.Brancher.Switch): in one transaction, under both records' row
// locks, the rows after that point change places (under negated numbers
// first: they are keyed by conversation and number), their checksums
// rewritten; the links are rewritten to match; every other conversation
// sharing one's messages past the point is pointed at the other, which
// holds them now; the kept results change places too; and both marks
// are dropped.
func (s *Store) Switch(ctx context.Context, id, branch string) error {
	doing := "switching conversation " + id + " to its branch " + branch
	now := s.hostNow()
	err := s.write(ctx, id, doing, false, func(tx pgx.Tx, w writeState) error {
		if err := s.allows(ctx, id, w); err != nil {
			return err
		}
		if err := s.counts(doing, w); err != nil {
			return err
		}
		me, _, err := s.readLink(ctx, tx, id, "")
		if err != nil {
			return err
		}
		br, found, err := s.readLink(ctx, tx, branch, "FOR UPDATE")
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%s: %w", doing, record.NotFound(branch))
		}
		if br.branchOf != id {
			return record.NotBranch(id, branch, br.branchOf)
		}
		if err := s.unwritten(ctx, tx, []string{branch}, w.now); err != nil {
			return err
		}
		mine, err := s.segments(ctx, tx, me)
		if err != nil {
			return err
		}
		theirs, err := s.segments(ctx, tx, br)
		if err != nil {
			return err
		}
		p := parting(mine, theirs)
		toMe, err := s.taking(ctx, tx, me, br, p)
		if err != nil {
			return err
		}
		toBr, err := s.taking(ctx, tx, br, me, p)
		if err != nil {
			return err
		}
		// the rows shared but not stored in the one they go to, read
		// before any moves: copies
		meCopies, err := s.copies(ctx, tx, theirs, p, toMe.copyTo)
		if err != nil {
			return err
		}
		brCopies, err := s.copies(ctx, tx, mine, p, toBr.copyTo)
		if err != nil {
			return err
		}
		if err := s.moveRows(ctx, tx, id, branch, p, true); err != nil {
			return err
		}
		if err := s.moveRows(ctx, tx, branch, id, p, false); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE messages SET seq = -seq WHERE conversation = $1 AND seq < 0`, branch); err != nil {
			return s.explain(doing, err)
		}
		if err := s.insertCopies(ctx, tx, id, meCopies); err != nil {
			return err
		}
		if err := s.insertCopies(ctx, tx, branch, brCopies); err != nil {
			return err
		}
		if err := s.repoint(ctx, tx, map[string]string{id: branch, branch: id}, p, id, branch); err != nil {
			return err
		}
		updated := toMicro(now)
		for _, r := range []struct {
			id     string
			t      takes
			count  int
			branch string
		}{{id, toMe, br.count, me.branchOf}, {branch, toBr, me.count, br.branchOf}} {
			if _, err := tx.Exec(ctx, `UPDATE conversations SET messages = $2, base = $3, base_at = $4, base_crc = $5, updated = $6, updated_crc = $7 WHERE id = $1`,
				r.id, r.count, r.t.base, r.t.baseAt, record.BaseChecksum(r.id, r.t.base, r.t.baseAt, r.branch), updated, updatedChecksum(r.id, updated)); err != nil {
				return s.explain(doing, err)
			}
		}
		// their marks were set over messages they no longer hold (marks.go)
		if _, err := tx.Exec(ctx, `DELETE FROM conversation_marks WHERE conversation IN ($1, $2)`, id, branch); err != nil {
			return s.explain(doing, err)
		}
		return s.swapKept(ctx, tx, id, branch)
	})
	if err != nil {
		return err
	}
	s.forget(id)
	s.forget(branch)
	return nil
}

// unwritten is the error for changing branches ids, which their
// conversation's writer changes (Switch, Delete), while a live holder of a
// branch's own claim may be writing it (judged at now, the database's
// time): a *history.HeldError naming the first; nil when none is.
func (s *Store) unwritten(ctx context.Context, tx pgx.Tx, ids []string, now time.Time) error {
	rows, err := tx.Query(ctx, `SELECT conversation, token, pid, host, node, since, expires, epoch FROM claims WHERE conversation = ANY($1) AND token <> '' ORDER BY conversation`, ids)
	if err != nil {
		return s.explain(fmt.Sprintf("reading the claims of branches %v", ids), err)
	}
	type branchClaim struct {
		id string
		claim
	}
	held, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (branchClaim, error) {
		var c branchClaim
		var pid int32
		err := row.Scan(&c.id, &c.Token, &pid, &c.Host, &c.Node, &c.Since, &c.expires, &c.Epoch)
		c.PID, c.Since, c.expires = int(pid), c.Since.UTC(), c.expires.UTC()
		return c, err
	})
	if err != nil {
		return s.explain(fmt.Sprintf("reading the claims of branches %v", ids), err)
	}
	for _, c := range held {
		if c.alive(now) {
			return &history.HeldError{Conversation: c.id, Holder: c.Holder, Expires: c.expires}
		}
	}
	return nil
}

// storedRow is a message's row as stored, moved or copied whole (its
// bytes and checksum) by a rewind, switch or fork.
type storedRow struct {
	seq int
	raw []byte
	crc int64
}

// copies reads, in tx, the messages after p to through of the
// conversation stored in segs, their checksums checked; none for through 0.
func (s *Store) copies(ctx context.Context, tx pgx.Tx, segs []segment, p, through int) ([]storedRow, error) {
	var out []storedRow
	for _, sg := range segs {
		lo, hi := max(sg.lo, p+1), min(sg.hi, through)
		if lo > hi {
			continue
		}
		doing := fmt.Sprintf("reading messages %d to %d of conversation %s", lo, hi, sg.in)
		rows, err := tx.Query(ctx, `SELECT seq, message, crc FROM messages WHERE conversation = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq`, sg.in, lo, hi)
		if err != nil {
			return nil, s.explain(doing, err)
		}
		got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (storedRow, error) {
			var r storedRow
			err := row.Scan(&r.seq, &r.raw, &r.crc)
			return r, err
		})
		if err != nil {
			return nil, s.explain(doing, err)
		}
		for i, r := range got {
			if r.seq != lo+i {
				return nil, fmt.Errorf("history store %s: conversation %s: message %d is missing: %w", s.name, sg.in, lo+i, history.ErrDamaged)
			}
			if sum := record.MessageChecksum(sg.in, r.seq, r.raw); sum != r.crc {
				return nil, fmt.Errorf("history store %s: conversation %s, message %d is damaged: its bytes no longer match their checksum (stored %08x, now %08x): %w", s.name, sg.in, r.seq, r.crc, sum, history.ErrDamaged)
			}
		}
		if len(got) != hi-lo+1 {
			return nil, fmt.Errorf("history store %s: conversation %s: messages %d to %d are missing: %w", s.name, sg.in, lo+len(got), hi, history.ErrDamaged)
		}
		out = append(out, got...)
	}
	return out, nil
}

// insertCopies stores rows as conversation id's, under their numbers.
func (s *Store) insertCopies(ctx context.Context, tx pgx.Tx, id string, rows []storedRow) error {
	if len(rows) == 0 {
		return nil
	}
	seqs := make([]int32, len(rows))
	raws := make([][]byte, len(rows))
	crcs := make([]int64, len(rows))
	for i, r := range rows {
		seqs[i], raws[i], crcs[i] = int32(r.seq), r.raw, record.MessageChecksum(id, r.seq, r.raw)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO messages (conversation, seq, message, crc) SELECT $1, * FROM unnest($2::integer[], $3::bytea[], $4::bigint[])`, id, seqs, raws, crcs); err != nil {
		return s.explain("storing the messages conversation "+id+" takes from its branch", err)
	}
	return nil
}

// swapKept gives a's kept results to b and b's to a: read, deleted, then
// stored again (one statement cannot: both may keep a result of the same
// call, and the key is checked row by row).
func (s *Store) swapKept(ctx context.Context, tx pgx.Tx, a, b string) error {
	doing := "exchanging the kept results of conversations " + a + " and " + b
	rows, err := tx.Query(ctx, `DELETE FROM kept WHERE conversation IN ($1, $2) RETURNING CASE WHEN conversation = $1 THEN $2 ELSE $1 END, call_id, part`, a, b)
	if err != nil {
		return s.explain(doing, err)
	}
	var convs []string
	var calls, parts [][]byte
	for rows.Next() {
		var conv string
		var call, part []byte
		if err := rows.Scan(&conv, &call, &part); err != nil {
			rows.Close()
			return s.explain(doing, err)
		}
		convs, calls, parts = append(convs, conv), append(calls, call), append(parts, part)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.explain(doing, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO kept (conversation, call_id, part) SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[])`, convs, calls, parts); err != nil {
		return s.explain(doing, err)
	}
	return nil
}
