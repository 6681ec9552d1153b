package history

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/myelin-run/myelin/history/internal/record"
)

// Memory is a Store that keeps conversations in this process's memory: for
// embedding where nothing must outlive the process, and for tests and
// benchmarks that measure the agent without a disk. It keeps every promise
// of Store but durability — nothing survives the process — and its claims
// bind only the writers that share this Memory (one process). The zero
// value is ready to use; a Memory must not be copied after first use.
//
// Messages it returns are copies of the stored slices' headers: a caller
// must not change the parts it is given (no Store's caller may). A fork
// holds no copy of its base's messages: it reads them through its base
// (memory_branch.go).
type Memory struct {
	mu    sync.Mutex
	convs map[string]*memConversation
	made  uint64           // conversations made so far (memConversation.seq)
	now   func() time.Time // the clock claims are timed by (tests set it)
	reqs  map[string][]SentRequest

	// ShareBlobs makes Shared report true (Blobs, blobs_memory.go): a
	// Memory stands in for a shared store in tests where two agents with
	// two workspaces use it. Set it before first use.
	ShareBlobs bool
	blobs      memBlobs // blobs_memory.go
}

type memConversation struct {
	rec Conversation
	// msgs are its own messages, numbered from rec.BaseAt on: those
	// before are read from rec.Base (memory_branch.go).
	msgs  []Message
	claim *claimRow
	kept  map[string]Part
	order []string // call ids of kept, in the order first kept
	seq   uint64   // the Memory's count of conversations made, at its making: Branches' order
	mark  Mark     // memory_mark.go; dropped by Rewind and Switch
}

func (s *Memory) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

func (s *Memory) get(id string) (*memConversation, error) {
	c, ok := s.convs[id]
	if !ok {
		return nil, fmt.Errorf("conversation %s: %w", id, ErrNotFound)
	}
	return c, nil
}

// Create starts a conversation (see Store.Create).
func (s *Memory) Create(ctx context.Context, c Conversation) error {
	if err := stopped(ctx, "creating conversation "+c.ID); err != nil {
		return err
	}
	if c.ID == "" {
		return fmt.Errorf("creating a conversation: its id is empty")
	}
	if err := record.CheckLink(c.ID, c.Parent, c.ParentCall); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.convs == nil {
		s.convs = map[string]*memConversation{}
	}
	if _, ok := s.convs[c.ID]; ok {
		return fmt.Errorf("creating conversation %s: %w", c.ID, ErrExists)
	}
	if _, ok := s.convs[c.Parent]; c.Parent != "" && !ok {
		return record.NoParent(c.ID, c.Parent)
	}
	now := s.clock().UTC()
	c.Created, c.Updated, c.Messages = now, now, 0
	c.Base, c.BaseAt, c.BranchOf = "", 0, ""
	s.add(c)
	return nil
}

// Get returns a conversation's record (see Store.Get).
func (s *Memory) Get(ctx context.Context, id string) (Conversation, error) {
	if err := stopped(ctx, "reading conversation "+id); err != nil {
		return Conversation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(id)
	if err != nil {
		return Conversation{}, err
	}
	return c.rec, nil
}

// Messages returns a conversation's messages in order (see Store.Messages).
func (s *Memory) Messages(ctx context.Context, id string) ([]Message, error) {
	if err := stopped(ctx, "reading conversation "+id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return s.read(c)
}

// held is nil when w holds c's claim, else the error a write by w gets.
func (c *memConversation) held(id string, w Holder) error {
	if c.claim != nil && c.claim.Token == w.Token {
		return nil
	}
	var now claimRow
	if c.claim != nil {
		now = *c.claim
	}
	return lost(id, w, now, c.claim != nil)
}

// writable is conversation id for a write under ctx, after the claim check
// of every write (see Store): under Writing(ctx, w), w must hold the
// claim; without, no live holder may have it. s.mu is held.
func (s *Memory) writable(ctx context.Context, id string) (*memConversation, error) {
	c, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if w, writing := WriterOf(ctx); writing {
		return c, c.held(id, w)
	}
	if c.claim != nil && c.claim.alive(s.clock(), "") {
		return c, &HeldError{Conversation: id, Holder: c.claim.Holder, Expires: c.claim.expires}
	}
	return c, nil
}

// Append adds messages to a conversation, all or none (see Store.Append).
func (s *Memory) Append(ctx context.Context, id string, msgs ...Message) error {
	if err := stopped(ctx, "appending to conversation "+id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.writable(ctx, id)
	if err != nil {
		return err
	}
	now := s.clock().UTC()
	results := false
	for _, m := range msgs {
		m.Time = now
		c.msgs = append(c.msgs, m)
		for _, p := range m.Parts {
			results = results || p.Type == ToolResultPart
		}
	}
	if results {
		// emptied, not dropped: the next round keeps into them again
		clear(c.kept)
		c.order = c.order[:0]
	}
	c.rec.Updated = now
	c.count()
	return nil
}

// Claim takes conversation id's claim for h (see Store.Claim). Every
// holder of a Memory is in this process, so only the lease tells a live
// one from a stopped one.
func (s *Memory) Claim(ctx context.Context, id string, h Holder, lease time.Duration) (Holder, error) {
	if err := stopped(ctx, "claiming conversation "+id); err != nil {
		return h, err
	}
	if err := record.CheckClaim(id, h.Token, lease); err != nil {
		return h, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(id)
	if err != nil {
		return h, err
	}
	now := s.clock()
	switch {
	case c.claim != nil && c.claim.Token == h.Token:
		h.Since = c.claim.Since
	case c.claim != nil && c.claim.alive(now, ""):
		return h, &HeldError{Conversation: id, Holder: c.claim.Holder, Expires: c.claim.expires}
	default:
		h.Since = now.UTC()
	}
	c.claim = &claimRow{Holder: h, expires: now.Add(lease)}
	return h, nil
}

// Renew extends h's claim on id (see Store.Renew).
func (s *Memory) Renew(ctx context.Context, id string, h Holder, lease time.Duration) error {
	if err := stopped(ctx, "renewing the claim on conversation "+id); err != nil {
		return err
	}
	if err := record.CheckLease(id, lease); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(id)
	if err != nil {
		return err
	}
	if err := c.held(id, h); err != nil {
		return err
	}
	c.claim.expires = s.clock().Add(lease)
	return nil
}

// Release gives up h's claim on id (see Store.Release).
func (s *Memory) Release(ctx context.Context, id string, h Holder) error {
	if err := stopped(ctx, "releasing the claim on conversation "+id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[id]; ok && c.claim != nil && c.claim.Token == h.Token {
		c.claim = nil
	}
	return nil
}

// Keep stores finished calls' results ahead of their round (see
// Store.Keep).
func (s *Memory) Keep(ctx context.Context, id string, results ...Part) error {
	if err := stopped(ctx, "keeping results in conversation "+id); err != nil {
		return err
	}
	for _, p := range results {
		if err := record.CheckKept(id, p.Type == ToolResultPart, string(p.Type), p.CallID); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.writable(ctx, id)
	if err != nil {
		return err
	}
	if c.kept == nil {
		c.kept = map[string]Part{}
	}
	for _, p := range results {
		if _, ok := c.kept[p.CallID]; !ok {
			c.order = append(c.order, p.CallID)
		}
		c.kept[p.CallID] = p
	}
	return nil
}

// Kept returns the results kept for conversation id (see Store.Kept), in
// the order they were first kept.
func (s *Memory) Kept(ctx context.Context, id string) ([]Part, error) {
	if err := stopped(ctx, "reading the kept results of conversation "+id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(id)
	if err != nil {
		return nil, err
	}
	var out []Part
	for _, call := range c.order {
		out = append(out, c.kept[call])
	}
	return out, nil
}

// List returns the conversations, most recently updated first, branches
// left out (see Brancher.Branches).
func (s *Memory) List(ctx context.Context) ([]Conversation, error) {
	if err := stopped(ctx, "listing the conversations"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Conversation, 0, len(s.convs))
	for _, c := range s.convs {
		if c.rec.BranchOf == "" { // a branch is listed by Branches
			out = append(out, c.rec)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Updated.Equal(out[j].Updated) {
			return out[i].Updated.After(out[j].Updated)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// Children returns the conversations whose Parent is id, oldest first
// (see Family).
func (s *Memory) Children(ctx context.Context, id string) ([]Conversation, error) {
	if err := stopped(ctx, "listing the children of conversation "+id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Conversation
	for _, c := range s.convs {
		if c.rec.Parent == id && id != "" {
			out = append(out, c.rec)
		}
	}
	SortChildren(out)
	return out, nil
}

// Close does nothing: a Memory holds no resource.
func (s *Memory) Close() error { return nil }

var (
	_ Store    = (*Memory)(nil)
	_ Family   = (*Memory)(nil)
	_ Brancher = (*Memory)(nil)
)

// stopped is the error for a call made under a context that is done
// (wrapping its cause, context.Canceled or DeadlineExceeded), saying what
// was being done; nil while it runs. A Memory answers at once, but keeps
// the contract every store keeps: a caller that stopped is told so, and
// nothing is written for it.
func stopped(ctx context.Context, doing string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	return nil
}
