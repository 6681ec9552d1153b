package history

import (
	"context"

	"github.com/myelin-run/myelin/history/internal/record"
)

// SetMark keeps m as conversation id's mark (see Marker.SetMark), checking
// the claim as Append does.
func (s *Memory) SetMark(ctx context.Context, id string, m Mark) error {
	if err := stopped(ctx, "marking conversation "+id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.writable(ctx, id)
	if err != nil {
		return err
	}
	if err := record.CheckMark(id, m.From, len(m.Facts), c.rec.Messages); err != nil {
		return err
	}
	c.mark = Mark{From: m.From, Facts: append([]byte(nil), m.Facts...)}
	return nil
}

// Marked returns conversation id's mark and its messages from the mark's
// From on (see Marker.Marked), under the store's lock, so at one moment.
func (s *Memory) Marked(ctx context.Context, id string) (Mark, []Message, error) {
	if err := stopped(ctx, "reading conversation "+id); err != nil {
		return Mark{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(id)
	if err != nil {
		return Mark{}, nil, err
	}
	msgs, err := s.readRange(c, c.mark.From, c.rec.Messages)
	if err != nil {
		return Mark{}, nil, err
	}
	return c.mark, msgs, nil
}

// Record returns conversation id's record (see RecordReader): Get's,
// which counts nothing in memory.
func (s *Memory) Record(ctx context.Context, id string) (Conversation, error) {
	return s.Get(ctx, id)
}
