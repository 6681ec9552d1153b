package server

import (
	"context"
	"errors"
	"time"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
)

// EventWake is the type of the event a background script's wake is
// emitted as, before its turn: its data is background.Wake's JSON.
const EventWake = "wake"

// wakeRetry is how long a wake whose turn could not start (another
// writer holds the conversation, or, with workers, has a turn queued)
// waits before it is tried again. A wake is never dropped while the
// server runs.
const wakeRetry = 5 * time.Second

// Wake is the server's background.Waker: a background script's wake is
// emitted as a wake event on its conversation's stream, and its turn (the
// wake's message as the prompt) is queued on the conversation: it starts
// at once when no turn of this server runs the conversation, else when
// the running one ends, each wake in the order they came. With workers
// (Queue) the turn is queued there. It does not block.
func (s *Server) Wake(w background.Wake) {
	s.init()
	s.emit(w.Conversation, EventWake, w)
	c := s.lockedConv(w.Conversation)
	c.wakes = append(c.wakes, w)
	c.mu.Unlock()
	go s.nextWake(w.Conversation)
}

// nextWake starts the turn of conversation conv's oldest waiting wake,
// when no turn of this server runs it and it is not waiting out a
// refusal (wakesDue: its retry's timer calls this once it is due).
func (s *Server) nextWake(conv string) {
	c := s.lockedConv(conv)
	if len(c.wakes) == 0 || c.live() != nil || time.Now().Before(c.wakesDue) {
		c.mu.Unlock()
		return
	}
	w := c.wakes[0]
	c.wakes = c.wakes[1:]
	c.mu.Unlock()
	if s.Queue != nil {
		s.queueWake(w)
		return
	}
	a, notes := s.withTools(s.Agent, conv)
	t, started, busy := s.launch(context.Background(), conv, a, w.Message, notes)
	switch {
	case busy != nil: // a client's turn came first: this wake follows it
		s.requeue(w, false)
		return
	case t == nil:
		s.logf("server: the turn of background script %s's wake of conversation %s was not run: the server is closing", w.Script, conv)
		return
	}
	if err := <-started; err != nil {
		s.wakeFailed(w, err)
	}
}

// queueWake queues a wake's turn on the workers' queue: its prompt stored
// with the turn's job, as a client's.
func (s *Server) queueWake(w background.Wake) {
	prompt, told := s.goneNote(w.Conversation, w.Message)
	user := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: result.WellFormed(prompt)}}}
	err := s.Queue.Enqueue(context.Background(), w.Conversation, QueuedTurn{Turn: newTurnID()}, user)
	if err != nil {
		s.wakeFailed(w, err)
		return
	}
	if told != nil {
		told()
	}
}

// wakeFailed handles a wake whose turn could not start: one held by
// another writer, or behind a queued turn, is tried again later; another
// failure is reported on the conversation's stream and logged.
func (s *Server) wakeFailed(w background.Wake, err error) {
	var held *history.HeldError
	var queued *QueuedError
	if errors.As(err, &held) || errors.As(err, &queued) {
		s.requeue(w, true)
		return
	}
	msg := "the turn of background script " + w.Script + "'s wake could not start: " + err.Error()
	s.emit(w.Conversation, EventError, errorEvent{Message: msg})
	s.logf("server: conversation %s: %s", w.Conversation, msg)
}

// requeue puts w back first in its conversation's wakes; later, when
// nothing here will end a turn of it to start the next (another writer
// holds it): then it is tried again after wakeRetry, and not before
// (wakesDue) — the refused turn's own end, or another's, must not start
// it at once and leave a second retry running beside this one's.
func (s *Server) requeue(w background.Wake, later bool) {
	c := s.lockedConv(w.Conversation)
	c.wakes = append([]background.Wake{w}, c.wakes...)
	if later {
		c.wakesDue = time.Now().Add(wakeRetry)
	}
	c.mu.Unlock()
	if later {
		time.AfterFunc(wakeRetry, func() { s.nextWake(w.Conversation) })
	} else {
		// the turn in the way may have ended meanwhile
		go s.nextWake(w.Conversation)
	}
}

// goneNote is prompt with, before it, the note of the background scripts
// of conv that a restart took away (background.Manager.Gone), once; told
// is to be called once that prompt is stored (nil when there is no note).
func (s *Server) goneNote(conv, prompt string) (string, func()) {
	if s.Background == nil {
		return prompt, nil
	}
	note, told := s.Background.Gone(conv)
	if note == "" {
		return prompt, nil
	}
	return note + "\n\n" + prompt, told
}
