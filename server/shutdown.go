package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/myelin-run/myelin/agent"
)

// A server stops in three steps (Shutdown): it starts no more turns (a
// client's gets 503, a wake's is not run); the queued turns its workers
// run are handed back to the queue at once, for another worker to
// continue; the turns it runs itself have until the caller's deadline to
// finish, and are then cancelled as a cancel does (an answer cut
// mid-stream stored as cut, running calls answered), each reporting its
// turn.finished. Then the event streams end.

// NoticeStopping is the kind of the notice a turn running on a server
// that begins to stop gets: how long it has before it is cancelled.
const NoticeStopping = "server_stopping"

// NoticeHandedBack is the kind of the notice a queued turn reports
// instead of turn.finished when the worker running it stops: the turn is
// handed back to the queue, and the worker that takes it up goes on with
// it (its turn.finished is the turn's).
const NoticeHandedBack = "handed_back"

// handing is what the server holds of the queued turns it runs (RunQueued),
// so that Shutdown can hand them back. Server.mu guards it.
type handing struct {
	cancels map[*context.CancelCauseFunc]struct{}
	runs    sync.WaitGroup // added to while the server is not closed
}

// addQueued counts a queued turn about to run here, whose context cancel
// ends, false when the server is stopping (the turn is handed back
// unrun). done uncounts it.
func (s *Server) addQueued(cancel context.CancelCauseFunc) (done func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	h := &s.handing
	if h.cancels == nil {
		h.cancels = map[*context.CancelCauseFunc]struct{}{}
	}
	key := &cancel
	h.cancels[key] = struct{}{}
	h.runs.Add(1)
	return func() {
		s.mu.Lock()
		delete(h.cancels, key)
		s.mu.Unlock()
		h.runs.Done()
	}, true
}

// handBack stops every queued turn running here without ending it
// (agent.ErrHandedOver): each reports a handed_back notice and its job
// goes back to the queue. s.mu is held.
func (s *Server) handBack() {
	for cancel := range s.handing.cancels {
		(*cancel)(agent.ErrHandedOver)
	}
}

// closing reports whether the server has begun to stop: it starts no
// turn.
func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown stops the server: it refuses new turns at once (503 to a
// client; a background script's wake is not run), hands the queued turns
// its workers run back to the queue at once (each reports a handed_back
// notice, not turn.finished: the worker that takes its job up continues
// it), and lets the turns it runs itself go on until ctx ends, telling
// their watchers (a server_stopping notice, saying until when when ctx
// has a deadline). When ctx ends it cancels those still running as a
// cancel through the API does — each stores what it did, an answer cut
// mid-stream stored as cut, its running calls answered — and reports
// their turn.finished (reason cancelled). Once every turn has ended it
// ends the event streams and returns the number of turns it cancelled.
// It does not stop the HTTP server that serves s: requests are answered
// meanwhile (a cancel, an elicitation's answer, an event stream), and the
// caller stops it after. Called again, or after Close, it waits for the
// same end.
func (s *Server) Shutdown(ctx context.Context) (cancelled int) {
	s.init()
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.handBack()
	running := s.runningTurns()
	s.mu.Unlock()
	if first && ctx.Err() == nil {
		until := "until the server's grace period ends"
		if d, ok := ctx.Deadline(); ok {
			until = fmt.Sprintf("for up to %s (until %s)", time.Until(d).Round(time.Second), d.UTC().Format(time.RFC3339))
		}
		for _, r := range running {
			s.emit(r.conv, EventNotice, noticeEvent{Turn: r.turn.id, Kind: NoticeStopping,
				Text: "the server is stopping: it starts no new turn; this turn may go on " + until + ", then it is cancelled, storing what it did"})
		}
	}
	ended := make(chan struct{})
	go func() {
		s.turns.Wait()
		s.handing.runs.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
		for _, r := range running {
			if !isDone(r.turn.done) {
				cancelled++
			}
		}
		s.stop(errClosing)
		<-ended
	}
	if first {
		s.mu.Lock()
		s.stopForgetting() // a closed server sweeps no more
		s.mu.Unlock()
		if m, ok := s.log.(*memoryEvents); ok {
			m.close()
		}
		close(s.ended)
	} else {
		<-s.ended
	}
	return cancelled
}

// runningTurn is a turn of this server's and its conversation.
type runningTurn struct {
	conv string
	turn *running
}

// runningTurns are the turns this server runs itself; s.mu is held (it
// is released before a conversation's lock is taken).
func (s *Server) runningTurns() []runningTurn {
	convs := make(map[string]*conversation, len(s.convs))
	for id, c := range s.convs {
		convs[id] = c
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	var out []runningTurn
	for id, c := range convs {
		c.mu.Lock()
		if t := c.live(); t != nil {
			out = append(out, runningTurn{conv: id, turn: t})
		}
		c.mu.Unlock()
	}
	return out
}

// handedBack reports whether a queued turn run under ctx was stopped to be
// handed back to the queue (Shutdown).
func handedBack(ctx context.Context) bool {
	return handedOver(ctx) && errors.Is(context.Cause(ctx), agent.ErrHandedOver)
}

// errStopping is the answer to a turn started while the server stops.
const errStopping = "the server is stopping: it starts no new turn; start it on another server, or here once it is back"
