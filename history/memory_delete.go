package history

import "context"

var _ Deleter = (*Memory)(nil)

// Delete removes conversation id whole (see Deleter): its record, messages,
// kept results and claim, its requests and its files, and the bytes of
// those files that no other conversation's file has. Its claim is checked
// as every write's is.
func (s *Memory) Delete(ctx context.Context, id string) error {
	if err := stopped(ctx, "deleting conversation "+id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.writable(ctx, id); err != nil {
		return err
	}
	delete(s.convs, id)
	delete(s.reqs, id)
	b := &s.blobs
	gone := map[string]bool{}
	for name, hash := range b.paths {
		if name.id == id {
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
