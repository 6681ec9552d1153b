package history

import (
	"context"
	"fmt"
	"slices"

	"github.com/myelin-run/myelin/history/internal/record"
)

// This file is Memory's Brancher: forks that read their base's messages
// through it, never a copy, and rewinds and switches that move messages
// and point every conversation that shared them at where they went, as
// the durable stores do (docs/branches.md).

// add makes the conversation of record c (its ID new). s.mu is held.
func (s *Memory) add(c Conversation) *memConversation {
	if s.convs == nil {
		s.convs = map[string]*memConversation{}
	}
	s.made++
	m := &memConversation{rec: c, seq: s.made}
	s.convs[c.ID] = m
	m.count()
	return m
}

// count sets the record's count: the messages shared, then its own.
func (c *memConversation) count() { c.rec.Messages = c.rec.BaseAt + len(c.msgs) }

// segment is the messages from number from to number to (not included)
// of a conversation, which are owner's own.
type segment struct {
	owner    *memConversation
	from, to int
}

// segments are where conversation c's messages are kept, in order: its
// bases' own messages up to the points it shares them, then its own. A
// base missing, or holding fewer messages than shared, is damage (no
// Brancher operation leaves one). s.mu is held.
func (s *Memory) segments(c *memConversation) ([]segment, error) {
	var chain []segment
	limit := c.rec.Messages
	for cur, up := c, 0; ; up++ {
		if limit > cur.rec.BaseAt {
			chain = append(chain, segment{cur, cur.rec.BaseAt, limit})
		}
		limit = min(limit, cur.rec.BaseAt)
		if limit == 0 {
			break
		}
		base, ok := s.convs[cur.rec.Base]
		if !ok || base.rec.Messages < limit || up > len(s.convs) { // up: no base is its own
			return nil, fmt.Errorf("conversation %s: its first %d messages are to be read from conversation %q, which does not hold them: %w", cur.rec.ID, limit, cur.rec.Base, ErrDamaged)
		}
		cur = base
	}
	slices.Reverse(chain)
	return chain, nil
}

// read is conversation c's messages: for one that shares none, its own
// slice, clipped so that appends never reach the caller's; else a new
// slice of its bases' messages and its own. s.mu is held.
func (s *Memory) read(c *memConversation) ([]Message, error) {
	return s.readRange(c, 0, c.rec.Messages)
}

// readRange is conversation c's messages from index from to index to-1
// (0 ≤ from ≤ to ≤ its count), as read takes them: those of its own
// clipped, those of its bases in a new slice. s.mu is held.
func (s *Memory) readRange(c *memConversation, from, to int) ([]Message, error) {
	if from >= c.rec.BaseAt {
		return c.msgs[from-c.rec.BaseAt : to-c.rec.BaseAt : to-c.rec.BaseAt], nil
	}
	segs, err := s.segments(c)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, to-from)
	for _, g := range segs {
		if lo, hi := max(g.from, from), min(g.to, to); lo < hi {
			out = append(out, g.owner.msgs[lo-g.owner.rec.BaseAt:hi-g.owner.rec.BaseAt]...)
		}
	}
	return out, nil
}

// MessagesBetween returns conversation id's messages from index from to
// index to-1 (see RangeReader): its bases' and its own, read under the
// store's lock, so at one moment.
func (s *Memory) MessagesBetween(ctx context.Context, id string, from, to int) ([]Message, error) {
	if err := stopped(ctx, "reading conversation "+id); err != nil {
		return nil, err
	}
	if err := record.CheckRange(id, from, to); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(id)
	if err != nil {
		return nil, err
	}
	to = min(to, c.rec.Messages)
	return s.readRange(c, min(from, to), to)
}

// Fork creates conversation c, whose first c.BaseAt messages are read from
// c.Base (see Brancher.Fork). The record stored names the conversation
// that keeps those messages: c.Base, or one further up that c.Base shares
// them with, as the durable stores name it.
func (s *Memory) Fork(ctx context.Context, c Conversation) (Conversation, error) {
	if err := stopped(ctx, "forking conversation "+c.Base); err != nil {
		return Conversation{}, err
	}
	if err := record.CheckFork(c.ID, c.Base, c.BaseAt, c.BranchOf, c.Parent, c.ParentCall); err != nil {
		return Conversation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.convs[c.ID]; ok {
		return Conversation{}, fmt.Errorf("forking conversation %s into %s: %w", c.Base, c.ID, ErrExists)
	}
	base, ok := s.convs[c.Base]
	switch {
	case !ok:
		return Conversation{}, record.NoBase(c.ID, c.Base)
	case c.BaseAt > base.rec.Messages:
		return Conversation{}, record.BaseTooShort(c.ID, c.Base, c.BaseAt, base.rec.Messages)
	case c.System != "" && c.System != base.rec.System:
		return Conversation{}, record.ForkSystem(c.ID, c.Base)
	}
	if _, ok := s.convs[c.Parent]; c.Parent != "" && !ok {
		return Conversation{}, record.NoParent(c.ID, c.Parent)
	}
	// named where the messages are kept, as the durable stores name
	// them: the conversation further up whose first c.BaseAt messages the
	// base shares, so a rewind of the base never touches the fork
	holder := base
	for up := 0; holder.rec.Base != "" && c.BaseAt <= holder.rec.BaseAt; up++ {
		next, ok := s.convs[holder.rec.Base]
		if !ok || up > len(s.convs) {
			return Conversation{}, fmt.Errorf("forking conversation %s into %s: conversation %s shares its first messages with %q, which does not hold them: %w", c.Base, c.ID, holder.rec.ID, holder.rec.Base, ErrDamaged)
		}
		holder = next
	}
	now := s.clock().UTC()
	c.System, c.Created, c.Updated, c.Base = base.rec.System, now, now, holder.rec.ID
	return s.add(c).rec, nil
}

// Rewind takes conversation id back to its first at messages, the rest
// going to a new branch (see Brancher.Rewind).
func (s *Memory) Rewind(ctx context.Context, id string, at int) (Conversation, error) {
	if err := stopped(ctx, "rewinding conversation "+id); err != nil {
		return Conversation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.writable(ctx, id)
	if err != nil {
		return Conversation{}, err
	}
	if err := record.CheckRewind(id, at, c.rec.Messages); err != nil {
		return Conversation{}, err
	}
	now := s.clock().UTC()
	br := s.add(Conversation{ID: s.branchID(id), System: c.rec.System, Created: now, Updated: now, BranchOf: id})
	if k := at - c.rec.BaseAt; k >= 0 {
		// the messages after at are c's own: they move
		br.rec.Base, br.rec.BaseAt = id, at
		br.msgs, c.msgs = c.msgs[k:len(c.msgs):len(c.msgs)], c.msgs[:k:k]
	} else {
		// c shares more than at: the branch shares it all, and has c's own
		br.rec.Base, br.rec.BaseAt = c.rec.Base, c.rec.BaseAt
		br.msgs, c.msgs, c.rec.BaseAt = c.msgs, nil, at
	}
	s.repoint(at, c, br, map[string]string{id: br.rec.ID})
	br.kept, br.order, c.kept, c.order = c.kept, c.order, nil, nil
	c.mark = Mark{} // its messages changed other than by an append
	c.rec.Updated = now
	c.count()
	br.count()
	return br.rec, nil
}

// branchID is a free id for a new branch of conversation id: id~1, id~2,
// and so on. s.mu is held.
func (s *Memory) branchID(id string) string {
	for k := 1; ; k++ {
		if b := fmt.Sprintf("%s~%d", id, k); s.convs[b] == nil {
			return b
		}
	}
}

// repoint makes every conversation but x and b that shares more than at
// messages of a conversation in moved share them from the one it maps to,
// where those messages went. s.mu is held.
func (s *Memory) repoint(at int, x, b *memConversation, moved map[string]string) {
	var change []*memConversation
	for _, y := range s.convs {
		if _, ok := moved[y.rec.Base]; ok && y != x && y != b && y.rec.BaseAt > at {
			change = append(change, y)
		}
	}
	for _, y := range change {
		y.rec.Base = moved[y.rec.Base]
	}
}

// Branches returns the branches of conversation id, oldest first (see
// Brancher.Branches).
func (s *Memory) Branches(ctx context.Context, id string) ([]Conversation, error) {
	if err := stopped(ctx, "listing the branches of conversation "+id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return nil, err
	}
	var brs []*memConversation
	for _, c := range s.convs {
		if c.rec.BranchOf == id {
			brs = append(brs, c)
		}
	}
	slices.SortFunc(brs, func(a, b *memConversation) int {
		if c := a.rec.Created.Compare(b.rec.Created); c != 0 {
			return c
		}
		return int(a.seq) - int(b.seq)
	})
	out := make([]Conversation, len(brs))
	for i, b := range brs {
		out[i] = b.rec
	}
	return out, nil
}

// Switch makes conversation id continue as its branch does, and the
// branch as id did (see Brancher.Switch): id keeps the messages they
// share, its own after them move to the branch, and the branch's come to
// id.
func (s *Memory) Switch(ctx context.Context, id, branch string) error {
	if err := stopped(ctx, "switching conversation "+id+" to "+branch); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.writable(ctx, id)
	if err != nil {
		return err
	}
	b, err := s.get(branch)
	if err != nil {
		return fmt.Errorf("switching conversation %s to %s: %w", id, branch, err)
	}
	if b.rec.BranchOf != id {
		return record.NotBranch(id, branch, b.rec.BranchOf)
	}
	if err := s.unwritten(b); err != nil {
		return err
	}
	xs, err := s.segments(x)
	if err != nil {
		return err
	}
	bs, err := s.segments(b)
	if err != nil {
		return err
	}
	bOld, err := s.read(b)
	if err != nil {
		return err
	}
	xOld, p := x.rec, parted(xs, bs)
	if k := p - xOld.BaseAt; k >= 0 {
		x.msgs, b.msgs = append(x.msgs[:k:k], bOld[p:]...), x.msgs[k:len(x.msgs):len(x.msgs)]
		b.rec.Base, b.rec.BaseAt = id, p
	} else {
		x.msgs, b.msgs = slices.Clone(bOld[p:]), x.msgs
		x.rec.BaseAt = p
		b.rec.Base, b.rec.BaseAt = xOld.Base, xOld.BaseAt
	}
	s.repoint(p, x, b, map[string]string{id: branch, branch: id})
	x.kept, x.order, b.kept, b.order = b.kept, b.order, x.kept, x.order
	x.mark, b.mark = Mark{}, Mark{} // both hold other messages now
	now := s.clock().UTC()
	x.rec.Updated, b.rec.Updated = now, now
	x.count()
	b.count()
	return nil
}

// unwritten is the error for changing branch b, which its conversation's
// writer changes (Switch, Delete), while a live holder of b's own claim
// may be writing it: nil when none is. s.mu is held.
func (s *Memory) unwritten(b *memConversation) error {
	if b.claim != nil && b.claim.alive(s.clock(), "") {
		return &HeldError{Conversation: b.rec.ID, Holder: b.claim.Holder, Expires: b.claim.expires}
	}
	return nil
}

// parted is how many first messages two conversations kept in segments
// xs and bs share: the same messages of the same owner.
func parted(xs, bs []segment) int {
	p := 0
	for i := 0; i < len(xs) && i < len(bs); i++ {
		x, b := xs[i], bs[i]
		if x.owner != b.owner || x.from != b.from {
			break
		}
		p = min(x.to, b.to)
		if x.to != b.to {
			break
		}
	}
	return p
}

// family is conversation id and the conversations whose messages it
// holds or held — those it shares messages of, up its bases, and the
// branches of each and what each is a branch of — in that order: the
// conversations whose kept files its messages may name (Blobs). s.mu is
// held.
func (s *Memory) family(id string) []string {
	out := []string{id}
	seen := map[string]bool{id: true}
	for i := 0; i < len(out); i++ {
		c := s.convs[out[i]]
		if c == nil {
			continue
		}
		next := []string{c.rec.Base, c.rec.BranchOf}
		for _, o := range s.convs {
			if o.rec.BranchOf == c.rec.ID {
				next = append(next, o.rec.ID)
			}
		}
		for _, n := range next {
			if n != "" && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// branchesWith is conversation id and its branches, theirs too. s.mu is
// held.
func (s *Memory) branchesWith(id string) map[string]bool {
	out := map[string]bool{id: true}
	for grew := true; grew; {
		grew = false
		for _, c := range s.convs {
			if out[c.rec.BranchOf] && !out[c.rec.ID] {
				out[c.rec.ID], grew = true, true
			}
		}
	}
	return out
}
