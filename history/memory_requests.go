package history

import (
	"context"
	"slices"

	"github.com/myelin-run/myelin/history/internal/record"
)

// AddRequest keeps r as conversation id's next request (see Requests).
func (s *Memory) AddRequest(ctx context.Context, id string, r SentRequest) (int, error) {
	if err := stopped(ctx, "keeping a request of conversation "+id); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return 0, err
	}
	if s.reqs == nil {
		s.reqs = map[string][]SentRequest{}
	}
	r.N = len(s.reqs[id]) + 1
	r.Body = slices.Clone(r.Body)
	r.Size = len(r.Body)
	if r.Time.IsZero() {
		r.Time = s.clock().UTC()
	}
	s.reqs[id] = append(s.reqs[id], r)
	return r.N, nil
}

// Request returns conversation id's n-th request (see Requests).
func (s *Memory) Request(ctx context.Context, id string, n int) (SentRequest, error) {
	if err := stopped(ctx, "reading a request of conversation "+id); err != nil {
		return SentRequest{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return SentRequest{}, err
	}
	rs := s.reqs[id]
	if n < 1 || n > len(rs) {
		return SentRequest{}, record.NoRequest(id, n, len(rs))
	}
	r := rs[n-1]
	r.Body = slices.Clone(r.Body)
	return r, nil
}

// RequestCount is how many requests conversation id has (see Requests).
func (s *Memory) RequestCount(ctx context.Context, id string) (int, error) {
	if err := stopped(ctx, "counting the requests of conversation "+id); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return 0, err
	}
	return len(s.reqs[id]), nil
}

// RequestList returns conversation id's requests without their bodies
// (see Requests).
func (s *Memory) RequestList(ctx context.Context, id string) ([]SentRequest, error) {
	if err := stopped(ctx, "listing the requests of conversation "+id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return nil, err
	}
	out := make([]SentRequest, len(s.reqs[id]))
	for i, r := range s.reqs[id] {
		r.Body = nil
		out[i] = r
	}
	return out, nil
}
