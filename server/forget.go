package server

// This file is how the server forgets what it holds of a conversation
// once nothing of it runs here: a server that has served a million
// conversations must not keep a million entries. An entry whose
// conversation has no turn running on this server (a client's, a wake's
// or a queued one a worker here runs) and no wake waiting, and that no
// one has used for EventsIdle (an hour by default, as its
// events), is dropped: all it still held was the tool set its last turn
// offered (for the notice that the tools changed since, which a restart
// forgets too) and its last turn's end (for a cancel's "already
// finished"). A caller that took an entry a sweep dropped meanwhile
// takes the new one (lockedConv), so no wake or turn lands in a dropped
// entry. A closed server sweeps no more.

import (
	"maps"
	"time"
)

// lockedConv is the server's entry of conversation id, made on first use,
// locked, and not dropped: the caller unlocks it. Using it keeps it for
// another idle period.
func (s *Server) lockedConv(id string) *conversation {
	for {
		s.mu.Lock()
		c := s.convs[id]
		if c == nil {
			c = &conversation{}
			s.convs[id] = c
			if s.forgetting == nil && !s.closed {
				s.forgetLater()
			}
		}
		s.mu.Unlock()
		c.mu.Lock()
		if !c.gone {
			c.used = time.Now()
			return c
		}
		c.mu.Unlock() // dropped since it was looked up: take the new one
	}
}

// idleFor is how long an entry of a conversation nothing runs stays unused
// before it is dropped: the events' idle period.
func (s *Server) idleFor() time.Duration {
	if s.EventsIdle > 0 {
		return s.EventsIdle
	}
	return DefaultEventsIdle
}

// forgetIdle drops the entries of conversations with no turn running here
// and no wake waiting that no one has used since before now minus the
// idle period, and sets the next sweep while any entry is left.
func (s *Server) forgetIdle(now time.Time) {
	idle := s.idleFor()
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped := 0
	for id, c := range s.convs {
		c.mu.Lock()
		if c.idle() && now.Sub(c.used) >= idle {
			c.gone = true
			delete(s.convs, id)
			dropped++
		}
		c.mu.Unlock()
	}
	if dropped >= shrinkAfter && dropped > len(s.convs) {
		// a map keeps the room of its largest size: after a burst of
		// conversations, the room goes with them
		s.convs = maps.Clone(s.convs)
	}
	s.stopForgetting()
	if len(s.convs) > 0 && !s.closed {
		s.forgetLater()
	}
}

// forgetLater sets the next sweep, half an idle period from now. s.mu is
// held.
func (s *Server) forgetLater() {
	s.forgetting = time.AfterFunc(s.idleFor()/2, func() { s.forgetIdle(time.Now()) })
}

// shrinkAfter is how many entries a sweep drops, more than it leaves,
// before the map is made again at its new size.
const shrinkAfter = 1024

// stopForgetting cancels the next sweep, if one is due. s.mu is held.
func (s *Server) stopForgetting() {
	if s.forgetting != nil {
		s.forgetting.Stop()
		s.forgetting = nil
	}
}

// live is c's turn that runs on this server, nil when none does (none
// started, or it ended). c.mu is held.
func (c *conversation) live() *running {
	if t := c.turn; t != nil && !isDone(t.done) {
		return t
	}
	return nil
}

// idle reports whether nothing of c runs on this server: no turn, no
// queued turn a worker of it runs, no wake waiting for one. c.mu is held.
func (c *conversation) idle() bool {
	return c.live() == nil && c.queued == 0 && len(c.wakes) == 0
}

// drop drops conversation id's entry, its conversation deleted, unless a
// turn of it still runs here (its wakes go with it). s.mu is held.
func (s *Server) drop(id string) {
	c := s.convs[id]
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.live() == nil {
		c.gone = true
		delete(s.convs, id)
	}
	c.mu.Unlock()
}

// runsQueued counts a queued turn of conversation conv that a worker of
// this server runs from now, so that its entry stays while it runs, and
// returns what counts it out.
func (s *Server) runsQueued(conv string) func() {
	c := s.lockedConv(conv)
	c.queued++
	c.mu.Unlock()
	return func() {
		c.mu.Lock() // not dropped meanwhile: it was not idle
		c.queued--
		c.used = time.Now()
		c.mu.Unlock()
	}
}
