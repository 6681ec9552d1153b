package history

import (
	"context"
	"slices"

	"github.com/myelin-run/myelin/history/internal/record"
)

var _ Deleter = (*Memory)(nil)

// Delete removes conversation id whole (see Deleter): its record, messages,
// kept results and claim, its requests and its files, its branches
// (Brancher) with theirs, and the bytes of those files that no other
// conversation's file has. Its claim is checked as every write's is, and
// a live holder of a branch's claim refuses it (HeldError). It is refused
// (ErrHasForks) while another conversation shares the messages of id or
// of its branches.
func (s *Memory) Delete(ctx context.Context, id string) error {
	if err := stopped(ctx, "deleting conversation "+id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.writable(ctx, id); err != nil {
		return err
	}
	ids := s.branchesWith(id)
	var forks []string
	for _, c := range s.convs {
		if ids[c.rec.Base] && !ids[c.rec.ID] {
			forks = append(forks, c.rec.ID)
		}
	}
	if len(forks) > 0 {
		slices.Sort(forks)
		return record.HasForks(id, forks)
	}
	for b := range ids {
		if b == id {
			continue
		}
		if err := s.unwritten(s.convs[b]); err != nil {
			return err // a branch its own writer holds
		}
	}
	for gone := range ids {
		delete(s.convs, gone)
		delete(s.reqs, gone)
	}
	b := &s.blobs
	gone := map[string]bool{}
	for name, hash := range b.paths {
		if ids[name.id] {
			gone[hash] = true
			delete(b.paths, name)
		}
	}
	for _, hash := range b.paths {
		delete(gone, hash) // another conversation's file has these bytes
	}
	for hash := range gone {
		delete(b.data, hash)
	}
	return nil
}
