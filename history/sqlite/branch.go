package sqlite

// This file is the SQLite store's forks and branches (history.Brancher,
// docs/branches.md): a fork is one record naming the messages it shares
// (base, base_at), a rewind and a switch move rows between conversations
// and point the records that shared them at where they went, each in one
// transaction.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

var _ history.Brancher = (*Store)(nil)

// checkBase checks a record's link to the messages it shares against its
// checksum (record.BaseChecksum).
func (s *Store) checkBase(id, base string, baseAt int, branchOf string, crc int64) error {
	if sum := record.BaseChecksum(id, base, baseAt, branchOf); sum != crc {
		return fmt.Errorf("history store %s: the record of conversation %s is damaged: the messages it shares (base %q, first %d, branch of %q) no longer match their checksum (stored %08x, now %08x): %w", s.path, id, base, baseAt, branchOf, crc, sum, history.ErrDamaged)
	}
	return nil
}

// link is what a fork, rewind or switch reads of a record in its
// transaction: never its messages, so that forking costs the same
// whatever their number.
type link struct {
	id, system       string
	count            int // messages it holds, its base's first baseAt among them
	base, branchOf   string
	baseAt           int
	parent, parentTo string
}

// readLink reads conversation id's record in tx, checked against its
// checksums; ok is false when there is no such conversation.
func (s *Store) readLink(ctx context.Context, tx *sql.Tx, id string) (l link, ok bool, err error) {
	var created string
	var crc, baseCRC int64
	err = tx.QueryRowContext(ctx, `SELECT id, system, created, crc, parent, parent_call, messages, base, base_at, branch_of, base_crc FROM conversations WHERE id = ?`, id).
		Scan(&l.id, &l.system, &created, &crc, &l.parent, &l.parentTo, &l.count, &l.base, &l.baseAt, &l.branchOf, &baseCRC)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, s.explain("reading the record of conversation "+id, err)
	}
	if err := s.checkRecord(l.id, l.system, created, l.parent, l.parentTo, crc); err != nil {
		return l, false, err
	}
	if err := s.checkBase(l.id, l.base, l.baseAt, l.branchOf, baseCRC); err != nil {
		return l, false, err
	}
	if l.baseAt > l.count || l.baseAt < 0 {
		return l, false, fmt.Errorf("history store %s: conversation %s shares the first %d messages of %s but holds %d: %w", s.path, id, l.baseAt, l.base, l.count, history.ErrDamaged)
	}
	return l, true, nil
}

// linkToWrite is readLink of conversation id for a write of it (a
// rewind, a switch): its absence is ErrNotFound, and its claim is checked.
func (s *Store) linkToWrite(ctx context.Context, tx *sql.Tx, id string) (link, error) {
	l, ok, err := s.readLink(ctx, tx, id)
	if err != nil {
		return l, err
	}
	if !ok {
		return l, record.NotFound(id)
	}
	return l, s.checkClaim(ctx, tx, id)
}

// mustLink is readLink of a conversation another record names (a base):
// its absence is damage.
func (s *Store) mustLink(ctx context.Context, tx *sql.Tx, id, namedBy string) (link, error) {
	l, ok, err := s.readLink(ctx, tx, id)
	if err == nil && !ok {
		err = fmt.Errorf("history store %s: conversation %s shares the messages of %s, which is not in the store: %w", s.path, namedBy, id, history.ErrDamaged)
	}
	return l, err
}

// setLink rewrites conversation id's link (and its checksum).
func setLink(ctx context.Context, tx *sql.Tx, id, base string, baseAt int, branchOf string) error {
	_, err := tx.ExecContext(ctx, `UPDATE conversations SET base = ?, base_at = ?, branch_of = ?, base_crc = ? WHERE id = ?`,
		base, baseAt, branchOf, record.BaseChecksum(id, base, baseAt, branchOf), id)
	return err
}

// touchCount sets conversation id's count of messages and its last update
// time.
func touchCount(ctx context.Context, tx *sql.Tx, id string, count int, now time.Time) error {
	updated := now.Format(record.TimeFormat)
	_, err := tx.ExecContext(ctx, `UPDATE conversations SET messages = ?, updated = ?, updated_crc = ? WHERE id = ?`,
		count, updated, record.UpdatedChecksum(id, updated), id)
	return err
}

// Fork creates conversation c continuing the first c.BaseAt messages of
// c.Base (see history.Brancher): one record, in one synced transaction,
// whatever their number. Where the base's first c.BaseAt messages are
// themselves shared, the fork names the conversation they are stored in.
func (s *Store) Fork(ctx context.Context, c history.Conversation) (history.Conversation, error) {
	if err := record.CheckFork(c.ID, c.Base, c.BaseAt, c.BranchOf, c.Parent, c.ParentCall); err != nil {
		return history.Conversation{}, err
	}
	if c.Created.IsZero() {
		c.Created = time.Now().UTC()
	}
	created := c.Created.UTC().Format(record.TimeFormat)
	doing := fmt.Sprintf("forking conversation %s at message %d into %s", c.Base, c.BaseAt, c.ID)
	var out history.Conversation
	err := s.write(ctx, doing, false, func(tx *sql.Tx) error {
		b, ok, err := s.readLink(ctx, tx, c.Base)
		if err != nil {
			return err
		}
		if !ok {
			return record.NoBase(c.ID, c.Base)
		}
		if c.System != "" && c.System != b.system {
			return record.ForkSystem(c.ID, c.Base)
		}
		if c.BaseAt > b.count {
			return record.BaseTooShort(c.ID, c.Base, c.BaseAt, b.count)
		}
		if c.Parent != "" {
			if _, ok, err := s.readLink(ctx, tx, c.Parent); err != nil {
				return err
			} else if !ok {
				return record.NoParent(c.ID, c.Parent)
			}
		}
		system := b.system
		// the messages are stored further down where the base shares
		// them: named there, a rewind of the base never touches the fork
		for depth := 0; b.base != "" && c.BaseAt <= b.baseAt; depth++ {
			if depth > maxBases {
				return fmt.Errorf("history store %s: %s: the bases of %s lead back to it: %w", s.path, doing, c.Base, history.ErrDamaged)
			}
			if b, err = s.mustLink(ctx, tx, b.base, b.id); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, system, created, updated, crc, parent, parent_call, updated_crc, messages, base, base_at, base_crc)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			c.ID, system, created, created, record.RecordChecksum(c.ID, system, created, c.Parent, c.ParentCall), c.Parent, c.ParentCall,
			record.UpdatedChecksum(c.ID, created), c.BaseAt, b.id, c.BaseAt, record.BaseChecksum(c.ID, b.id, c.BaseAt, ""))
		if err != nil {
			return s.explain(doing, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("%s: %w (another process may have created it at the same moment)", doing, history.ErrExists)
		}
		at, _ := time.Parse(record.TimeFormat, created)
		out = history.Conversation{ID: c.ID, System: system, Created: at, Updated: at, Messages: c.BaseAt,
			Parent: c.Parent, ParentCall: c.ParentCall, Base: b.id, BaseAt: c.BaseAt}
		return nil
	})
	if err != nil {
		return history.Conversation{}, err
	}
	s.forget(c.ID) // what a read of a deleted conversation of this id kept meanwhile
	return out, nil
}

// branchName is the id of conversation id's next branch: id~N, N the
// first number from 1 that no conversation has. Readable and typed as it
// is printed (history switch X X~2), and the same in every store
// (history.Memory names them so).
func (s *Store) branchName(ctx context.Context, tx *sql.Tx, id string) (string, error) {
	for n := 1; ; n++ {
		name := fmt.Sprintf("%s~%d", id, n)
		var taken int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversations WHERE id = ?`, name).Scan(&taken); err != nil {
			return "", err
		}
		if taken == 0 {
			return name, nil
		}
	}
}

// Rewind takes conversation id back to its first at messages, moving the
// rest to a new branch (see history.Brancher), in one synced transaction
// under id's claim: the rows after at change conversation (their
// checksums rewritten, each checked first), and every other conversation
// that shared them is pointed at the branch.
func (s *Store) Rewind(ctx context.Context, id string, at int) (history.Conversation, error) {
	doing := fmt.Sprintf("rewinding conversation %s to message %d", id, at)
	var branch string
	err := s.write(ctx, doing, false, func(tx *sql.Tx) error {
		x, err := s.linkToWrite(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := record.CheckRewind(id, at, x.count); err != nil {
			return err
		}
		if branch, err = s.branchName(ctx, tx, id); err != nil {
			return s.explain(doing, err)
		}
		// The branch holds all id held: its first at messages as id's
		// (or as id's base's, where id shares more than at of them), then
		// id's own after that point.
		base, baseAt, from := id, at, at
		if at < x.baseAt {
			base, baseAt, from = x.base, x.baseAt, x.baseAt
		}
		now := time.Now().UTC()
		created := now.Format(record.TimeFormat)
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, system, created, updated, crc, updated_crc, messages, base, base_at, branch_of, base_crc)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			branch, x.system, created, created, record.RecordChecksum(branch, x.system, created, "", ""), record.UpdatedChecksum(branch, created),
			x.count, base, baseAt, id, record.BaseChecksum(branch, base, baseAt, id)); err != nil {
			return s.explain(doing, err)
		}
		if err := s.moveRows(ctx, tx, id, branch, from, -1); err != nil {
			return err
		}
		// what shared id past at shares the branch now: the same messages
		sharing, err := s.sharing(ctx, tx, id, at)
		if err != nil {
			return s.explain(doing, err)
		}
		for _, f := range sharing {
			if f.id == branch {
				continue
			}
			if err := setLink(ctx, tx, f.id, branch, f.baseAt, f.branchOf); err != nil {
				return s.explain(doing, err)
			}
		}
		if err := setLink(ctx, tx, id, x.base, min(x.baseAt, at), x.branchOf); err != nil {
			return s.explain(doing, err)
		}
		if err := touchCount(ctx, tx, id, at, now); err != nil {
			return s.explain(doing, err)
		}
		// the results kept for the round rewound are the branch's
		if _, err := tx.ExecContext(ctx, `UPDATE kept SET conversation = ? WHERE conversation = ?`, branch, id); err != nil {
			return s.explain(doing, err)
		}
		// its mark was set over messages it no longer holds (the
		// branch, a new record, has none)
		if _, err := tx.ExecContext(ctx, dropMarkSQL, id); err != nil {
			return s.explain(doing, err)
		}
		return nil
	})
	if err != nil {
		return history.Conversation{}, err
	}
	s.forget(id)
	s.forget(branch)
	return s.Get(ctx, branch)
}

// sharing returns the conversations whose base is id and that share more
// than its first at messages.
func (s *Store) sharing(ctx context.Context, tx *sql.Tx, id string, at int) ([]link, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, base_at, branch_of FROM conversations WHERE base = ? AND base_at > ?`, id, at)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []link
	for rows.Next() {
		var l link
		if err := rows.Scan(&l.id, &l.baseAt, &l.branchOf); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// moveRows moves conversation from's messages numbered after after (up to
// upTo; -1: all) to conversation to, under the same numbers: each is
// checked against its checksum first (a damaged message is reported, not
// moved under a new checksum that would hide it), then given its checksum
// in to.
func (s *Store) moveRows(ctx context.Context, tx *sql.Tx, from, to string, after, upTo int) error {
	doing := fmt.Sprintf("moving the messages of conversation %s after %d to %s", from, after, to)
	if upTo < 0 {
		upTo = math.MaxInt
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, message, crc FROM messages WHERE conversation = ? AND seq > ? AND seq <= ? ORDER BY seq`, from, after, upTo)
	if err != nil {
		return s.explain(doing, err)
	}
	type moved struct {
		seq int
		crc int64
	}
	var sums []moved
	for rows.Next() {
		var r struct {
			seq int
			crc int64
		}
		var raw sql.RawBytes
		if err := rows.Scan(&r.seq, &raw, &r.crc); err != nil {
			rows.Close()
			return s.explain(doing, err)
		}
		if sum := record.MessageChecksum(from, r.seq, raw); sum != r.crc {
			rows.Close()
			return fmt.Errorf("history store %s: %s: conversation %s, message %d is damaged: its bytes no longer match their checksum (stored %08x, now %08x): %w", s.path, doing, from, r.seq, r.crc, sum, history.ErrDamaged)
		}
		sums = append(sums, moved{r.seq, record.MessageChecksum(to, r.seq, raw)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.explain(doing, err)
	}
	for _, m := range sums {
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET conversation = ?, crc = ? WHERE conversation = ? AND seq = ?`, to, m.crc, from, m.seq); err != nil {
			return s.explain(doing, err)
		}
	}
	return nil
}

// Branches returns conversation id's branches, oldest first (see
// history.Brancher): id's record and its branches' read in one read
// transaction (a conversation deleted between them is ErrNotFound, not
// one without branches).
func (s *Store) Branches(ctx context.Context, id string) ([]history.Conversation, error) {
	doing := "listing the branches of conversation " + id
	tx, err := s.readDB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer tx.Rollback()
	if _, err := s.getIn(ctx, tx, id, recordColumns); err != nil {
		return nil, err
	}
	out, err := s.recordsIn(ctx, tx, doing, `SELECT `+recordColumns+` FROM conversations c WHERE branch_of = ?`, id)
	history.SortChildren(out) // by creation, then id
	return out, err
}

// level is one conversation of a chain of bases (chain) with how many of
// its first messages the one above it reads from it: it provides those
// numbered floor+1 to lim from its own rows, and the first floor from its
// base.
type level struct {
	link
	lim, floor int
}

// chain returns the chain of bases of conversation top: top itself (lim
// its count), its base (lim top's baseAt), its base's base, and so on to a
// conversation with no base; a chain leading back into itself is damage.
func (s *Store) chain(ctx context.Context, tx *sql.Tx, top link) ([]level, error) {
	out := []level{{link: top, lim: top.count}}
	seen := map[string]bool{top.id: true}
	for cur := top; cur.base != ""; {
		next, err := s.mustLink(ctx, tx, cur.base, cur.id)
		if err != nil {
			return nil, err
		}
		if seen[next.id] {
			return nil, fmt.Errorf("history store %s: the bases of conversation %s lead back to %s: %w", s.path, top.id, next.id, history.ErrDamaged)
		}
		seen[next.id] = true
		out = append(out, level{link: next, lim: min(out[len(out)-1].lim, cur.baseAt)})
		cur = next
	}
	for i := range out {
		if out[i].base != "" {
			out[i].floor = min(out[i].lim, out[i].baseAt)
		}
	}
	return out, nil
}

// parting is how many first messages conversations of chains a and b
// read from the same rows: where they part.
func parting(a, b []level) int {
	// from the bottom of each chain up, the levels that provide rows
	ia, ib := len(a)-1, len(b)-1
	skip := func(c []level, i int) int {
		for i >= 0 && c[i].floor >= c[i].lim {
			i--
		}
		return i
	}
	d := 0
	for {
		ia, ib = skip(a, ia), skip(b, ib)
		if ia < 0 || ib < 0 || a[ia].id != b[ib].id || a[ia].floor != b[ib].floor {
			return d
		}
		d = min(a[ia].lim, b[ib].lim)
		if a[ia].lim != b[ib].lim {
			return d
		}
		ia, ib = ia-1, ib-1
	}
}

// index is where conversation id is in chain c, -1 where it is not.
func index(c []level, id string) int {
	for i, l := range c {
		if l.id == id {
			return i
		}
	}
	return -1
}

// rowsMove is a range of a conversation's rows a switch moves.
type rowsMove struct {
	from        string
	after, upTo int
}

// side is what a switch makes of one of its two conversations (recv): the
// messages of other's chain after the point d where they part become
// recv's.
type side struct {
	base   string
	baseAt int
	pull   []rowsMove // rows that become recv's
	rebase []level    // conversations whose rows recv takes: based on recv at their lim
}

// plan plans side own[0] (recv) of a switch whose two chains, own and
// other, part at d: recv reads its first messages from the highest
// conversation of other's chain that does not read recv's (so that no
// chain ever leads back), when that one holds all d shared ones. Else it
// keeps its first d as they are: its own rows up to d on its base, or,
// where it owns none of them, the conversation that holds the d-th — one
// both chains read and no switch repoints. The rows of other's chain
// after d and above its base become recv's, and the conversations they
// were taken from read them from recv: what they read stays the same.
func plan(own, other []level, d int) (side, error) {
	recv := own[0]
	k := 1
	if i := index(other, recv.id); i >= 0 {
		k = i + 1
	}
	var p side
	top := len(other) // the levels whose rows recv takes: 0 to top-1
	switch {
	case k < len(other) && other[k].lim >= d && other[k].lim > 0:
		p.base, p.baseAt, top = other[k].id, other[k].lim, k
	case d == 0:
		// shares nothing: no base
	case recv.baseAt < d:
		p.base, p.baseAt = recv.base, recv.baseAt
	default:
		for _, l := range own[1:] {
			if l.floor < d && d <= l.lim {
				p.base, p.baseAt = l.id, d
				break
			}
		}
		if p.base == "" {
			return p, fmt.Errorf("no conversation below %s holds the %d messages it shares with the other", recv.id, d)
		}
	}
	for j := 0; j < top; j++ {
		l := other[j]
		lo := max(d, l.floor)
		if lo >= l.lim {
			continue
		}
		p.pull = append(p.pull, rowsMove{from: l.id, after: lo, upTo: l.lim})
		if j > 0 {
			p.rebase = append(p.rebase, l)
		}
	}
	return p, nil
}

// Switch makes conversation id continue as branch does after the point
// where they part (see history.Brancher), in one synced transaction under
// id's claim: the rows after that point change places (their checksums
// rewritten, each checked first), and every conversation that shared
// either is pointed at where its messages went.
func (s *Store) Switch(ctx context.Context, id, branch string) error {
	doing := fmt.Sprintf("switching conversation %s to branch %s", id, branch)
	err := s.write(ctx, doing, false, func(tx *sql.Tx) error {
		x, err := s.linkToWrite(ctx, tx, id)
		if err != nil {
			return err
		}
		b, ok, err := s.readLink(ctx, tx, branch)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s: %w", doing, record.NotFound(branch))
		}
		if b.branchOf != id {
			return record.NotBranch(id, branch, b.branchOf)
		}
		// nobody may be writing the branch while its rows go: a live
		// holder of its claim refuses the switch (whoever switches holds
		// id's claim, not the branch's)
		if c, ok, err := s.readClaim(ctx, tx, branch); err != nil {
			return err
		} else if err := s.claimAllows(context.Background(), branch, c, ok); err != nil {
			return err
		}
		cx, err := s.chain(ctx, tx, x)
		if err != nil {
			return err
		}
		cb, err := s.chain(ctx, tx, b)
		if err != nil {
			return err
		}
		d := parting(cx, cb)
		toX, err1 := plan(cx, cb, d)
		toB, err2 := plan(cb, cx, d)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("history store %s: %s: %w: %w", s.path, doing, err, history.ErrDamaged)
		}
		// who shared id or the branch past d shares the other now (read
		// before anything changes)
		shareX, err := s.sharing(ctx, tx, id, d)
		if err != nil {
			return s.explain(doing, err)
		}
		shareB, err := s.sharing(ctx, tx, branch, d)
		if err != nil {
			return s.explain(doing, err)
		}
		// rows change conversation through a name of no conversation
		// (checked at the commit): the branch's first
		if _, err := tx.ExecContext(ctx, `PRAGMA defer_foreign_keys = ON`); err != nil {
			return s.explain(doing, err)
		}
		moving := id + "\x00switching"
		for _, m := range toB.pull {
			if err := s.moveRows(ctx, tx, m.from, moving, m.after, m.upTo); err != nil {
				return err
			}
		}
		for _, m := range toX.pull {
			if err := s.moveRows(ctx, tx, m.from, id, m.after, m.upTo); err != nil {
				return err
			}
		}
		if err := s.moveRows(ctx, tx, moving, branch, 0, -1); err != nil {
			return err
		}
		changed := map[string]bool{id: true, branch: true}
		for _, r := range []struct {
			to     string
			rebase []level
		}{{id, toX.rebase}, {branch, toB.rebase}} {
			for _, l := range r.rebase {
				changed[l.id] = true
				if err := setLink(ctx, tx, l.id, r.to, l.lim, l.branchOf); err != nil {
					return s.explain(doing, err)
				}
			}
		}
		for _, r := range []struct {
			to    string
			forks []link
		}{{branch, shareX}, {id, shareB}} {
			for _, f := range r.forks {
				if changed[f.id] {
					continue
				}
				if err := setLink(ctx, tx, f.id, r.to, f.baseAt, f.branchOf); err != nil {
					return s.explain(doing, err)
				}
			}
		}
		now := time.Now().UTC()
		if err := setLink(ctx, tx, id, toX.base, toX.baseAt, x.branchOf); err != nil {
			return s.explain(doing, err)
		}
		if err := setLink(ctx, tx, branch, toB.base, toB.baseAt, b.branchOf); err != nil {
			return s.explain(doing, err)
		}
		if err := touchCount(ctx, tx, id, b.count, now); err != nil {
			return s.explain(doing, err)
		}
		if err := touchCount(ctx, tx, branch, x.count, now); err != nil {
			return s.explain(doing, err)
		}
		for _, q := range [][2]string{{moving, id}, {id, branch}, {branch, moving}} {
			if _, err := tx.ExecContext(ctx, `UPDATE kept SET conversation = ? WHERE conversation = ?`, q[0], q[1]); err != nil {
				return s.explain(doing, err)
			}
		}
		// the marks of both were set over messages they no longer hold
		// (those that only point elsewhere hold the same ones: theirs stay)
		for _, c := range []string{id, branch} {
			if _, err := tx.ExecContext(ctx, dropMarkSQL, c); err != nil {
				return s.explain(doing, err)
			}
		}
		// what each reads now is what the other read: checked whole
		// before it commits, so that a plan this code got wrong is an
		// error, never a store whose chains loop
		for _, c := range []string{id, branch} {
			l, err := s.mustLink(ctx, tx, c, c)
			if err != nil {
				return err
			}
			if _, err := s.chain(ctx, tx, l); err != nil {
				return fmt.Errorf("%s: %w", doing, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.forget(id)
	s.forget(branch)
	return nil
}
