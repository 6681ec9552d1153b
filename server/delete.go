package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/purge"
)

// EventDropper is the part of an EventLog that forgets a conversation's
// events: the server calls it when it deletes the conversation, so that
// its events go with it. It is optional; a log without it keeps them as
// long as it keeps any. It must not drop another conversation's events.
type EventDropper interface {
	Drop(ctx context.Context, conv string) error
}

// deleteConversation serves DELETE /v1/conversations/{id}: the
// conversation whole — its records, its requests, the files its store
// keeps, the spill files of the workspace it alone names (package purge)
// — and its events; the background scripts it started are cancelled. It answers 200 with what went (purge.Deleted); 409
// while a turn runs it (this server's, one queued, or any other writer
// holding its claim), naming it, and while forks share its messages
// (history.ErrHasForks); 404 for none.
func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := s.found(w, r, id); !ok {
		return
	}
	if busy := s.runningTurn(id); busy != "" {
		var h Held
		h.Error.Status = http.StatusConflict
		h.Error.Message = fmt.Sprintf("conversation %s is being advanced by turn %s of this server; cancel it or wait for its turn.finished event, then delete it", id, busy)
		h.Error.Turn = busy
		writeJSON(w, http.StatusConflict, h)
		return
	}
	if s.Queue != nil {
		if tid, err := s.Queue.Pending(r.Context(), id); err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("reading the turns queued for conversation %s: %v", id, err))
			return
		} else if tid != "" {
			var h Held
			h.Error.Status = http.StatusConflict
			h.Error.Message = fmt.Sprintf("conversation %s has turn %s queued or running; cancel it or wait for its turn.finished event, then delete it", id, tid)
			h.Error.Turn = tid
			writeJSON(w, http.StatusConflict, h)
			return
		}
	}
	d, err := purge.Conversation(r.Context(), s.Agent.Store, s.Workspace, id)
	var held *history.HeldError
	switch {
	case errors.As(err, &held):
		var h Held
		h.Error.Status = http.StatusConflict
		h.Error.Message = err.Error() + "; nothing was deleted: delete it once its turn has ended"
		h.Error.Holder = &held.Holder
		writeJSON(w, http.StatusConflict, h)
		return
	case errors.Is(err, history.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no conversation %q", id))
		return
	case errors.Is(err, history.ErrHasForks):
		// the forks would lose their first messages: they go first
		writeError(w, http.StatusConflict, err.Error()+"; nothing was deleted")
		return
	case errors.Is(err, purge.ErrCannotDelete):
		writeError(w, http.StatusNotImplemented, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if s.Background != nil {
		// what the conversation started ends with it: no wake of it comes
		for _, b := range s.Background.List(id) {
			if b.Status == "running" {
				if _, err := s.Background.Cancel(id, b.ID); err != nil {
					s.logf("cancelling background script %s of deleted conversation %s: %v", b.ID, id, err)
				}
			}
		}
	}
	if drop, ok := s.log.(EventDropper); ok {
		if err := drop.Drop(context.WithoutCancel(r.Context()), id); err != nil {
			s.logf("dropping the events of deleted conversation %s: %v", id, err)
		}
	}
	s.mu.Lock()
	s.drop(id)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, d)
}

// runningTurn is the id of the turn this server runs on conversation id,
// "" when none.
func (s *Server) runningTurn(id string) string {
	s.mu.Lock()
	c := s.convs[id]
	s.mu.Unlock()
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.live(); t != nil {
		return t.id
	}
	return ""
}

// Drop forgets conversation conv's events (EventDropper). A watcher
// still open on them gets no more.
func (m *memoryEvents) Drop(_ context.Context, conv string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.logs[conv]; l != nil {
		_, bytes := l.lastAppend()
		m.bytes -= int64(bytes)
		delete(m.logs, conv)
	}
	return nil
}
