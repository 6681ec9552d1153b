package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
)

// running is a turn this server started: running until done is closed,
// then ended with reason/err.
type running struct {
	id     string
	cancel context.CancelCauseFunc
	done   chan struct{}
	reason string // how it ended, once done
}

// errCancelled is the cause a cancelled turn's context carries.
var errCancelled = errors.New("the turn was cancelled through the API")

// TurnInput is the body of POST /v1/conversations/{id}/turns: the
// prompt, and what this turn changes of the server's settings.
type TurnInput struct {
	Prompt string `json:"prompt"`
	// Model, when set, is the model this turn's requests name. A model
	// other than the conversation's last one shares no cached prefix
	// with it (the turn says so in a notice).
	Model string `json:"model,omitempty"`
	// MaxRounds and MaxTokens, when above 0, bound this turn's tool
	// rounds and each of its answers.
	MaxRounds int `json:"max_rounds,omitempty"`
	MaxTokens int `json:"max_tokens,omitempty"`
	// MaxTurnTokens, MaxCost and MaxConversationCost, when above 0, are
	// this turn's budgets (agent.Agent's fields of those names): the
	// tokens of the turn, what it costs and what the conversation costs
	// in all, in US dollars. Each is a ceiling under the server's own
	// (serve --max-turn-tokens, --max-cost, --max-conversation-cost): it
	// may lower the server's, never raise it; one above it is a 400
	// saying what the server allows.
	MaxTurnTokens       int     `json:"max_turn_tokens,omitempty"`
	MaxCost             float64 `json:"max_cost,omitempty"`
	MaxConversationCost float64 `json:"max_conversation_cost,omitempty"`
}

// agentFor is the agent that runs a turn of in: the server's, or a clone
// with the turn's own model and limits. queued is true for a queued
// turn's worker (RunQueued): a budget above its own is lowered to it, not
// refused (budgets).
func (s *Server) agentFor(in TurnInput, queued bool) (*agent.Agent, error) {
	if in.Model == "" && in.MaxRounds == 0 && in.MaxTokens == 0 && in.MaxTurnTokens == 0 && in.MaxCost == 0 && in.MaxConversationCost == 0 {
		return s.Agent, nil
	}
	if in.MaxRounds < 0 || in.MaxTokens < 0 {
		return nil, fmt.Errorf("max_rounds %d, max_tokens %d: give a positive bound, or leave it out for the server's", in.MaxRounds, in.MaxTokens)
	}
	a := s.Agent.Clone()
	if in.Model != "" {
		a.Model = in.Model
	}
	if in.MaxRounds > 0 {
		a.MaxRounds = in.MaxRounds
	}
	if in.MaxTokens > 0 {
		a.MaxTokens = in.MaxTokens
	}
	if err := in.budgets(a, queued); err != nil {
		return nil, err
	}
	if _, err := a.Window(); err != nil {
		return nil, err
	}
	return a, nil
}

// TurnStarted is the answer to a turn started: 202 Accepted, the turn runs
// on; its events say what it does.
type TurnStarted struct {
	Turn         string `json:"turn"`
	Conversation string `json:"conversation"`
	// Events is where to watch it, from the event before the turn's first.
	Events string `json:"events"`
}

// Held is the body of a 409: the conversation is being advanced by
// another writer.
type Held struct {
	Error struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
		// Holder names the writer holding the conversation's claim.
		Holder *history.Holder `json:"holder,omitempty"`
		// Turn is this server's turn holding it, when it is one.
		Turn string `json:"turn,omitempty"`
	} `json:"error"`
}

func (s *Server) startTurn(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in TurnInput
	if err := readJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.Prompt == "" {
		writeError(w, http.StatusBadRequest, `a turn needs a prompt: {"prompt":"..."}`)
		return
	}
	a, err := s.agentFor(in, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := s.found(w, r, id); !ok {
		return
	}
	if s.closing() {
		// with workers too: a turn queued by a server that stops would
		// still run elsewhere, but its client is told to go elsewhere
		writeError(w, http.StatusServiceUnavailable, errStopping)
		return
	}
	if s.Queue != nil {
		s.startQueued(w, r, id, in)
		return
	}
	a, notes := s.withTools(a, id)
	from, err := s.log.Last(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the conversation's events: "+err.Error())
		return
	}
	t, started, busy := s.launch(r.Context(), id, a, in.Prompt, notes)
	switch {
	case t == nil && busy == nil:
		writeError(w, http.StatusServiceUnavailable, errStopping)
		return
	case t == nil:
		var h Held
		h.Error.Status = http.StatusConflict
		h.Error.Message = fmt.Sprintf("conversation %s is being advanced by turn %s of this server; cancel it or wait for its turn.finished event", id, busy.id)
		h.Error.Turn = busy.id
		writeJSON(w, http.StatusConflict, h)
		return
	}
	select {
	case err = <-started:
	case <-r.Context().Done():
		return // the turn runs on; its events say how it goes
	}
	if !refusedStart(w, err, "the turn could not start: ") {
		writeJSON(w, http.StatusAccepted, TurnStarted{Turn: t.id, Conversation: id,
			Events: fmt.Sprintf("/v1/conversations/%s/events?after=%d", id, from)})
	}
}

// launch starts a turn of conversation id on this server, run by a with
// prompt (a background script's wake, or a client's), its notes emitted
// after turn.started. It returns the turn and a channel that gets, once,
// nil when the turn holds the conversation's claim or the error that kept
// it from starting; or, when the conversation has a turn running here
// already, that turn as busy; or nothing when the server is closing.
// When a turn ends, the conversation's next wake, if one is waiting,
// starts (wakes.go). The turn runs detached from from (the request that
// started it: the turn outlives it), in the trace of from's span.
func (s *Server) launch(from context.Context, id string, a *agent.Agent, prompt string, notes []string) (t *running, started <-chan error, busy *running) {
	if !s.addTurn() {
		return nil, nil, nil
	}
	c := s.lockedConv(id)
	if cur := c.live(); cur != nil {
		c.mu.Unlock()
		s.turns.Done()
		return nil, nil, cur
	}
	t = &running{id: newTurnID(), done: make(chan struct{})}
	ctx, cancel := context.WithCancelCause(s.base)
	t.cancel = cancel
	c.turn = t
	c.mu.Unlock()

	ch := make(chan error, 1)
	go func() {
		defer s.nextWake(id) // after turns.Done and done: the next turn may start
		defer s.turns.Done()
		defer cancel(nil)
		tctx := turnContext(inTrace(ctx, from), id, t.id, a)
		full, told := s.goneNote(id, prompt)
		run := func(on func(agent.Event)) (agent.TurnResult, error) { return a.Turn(tctx, id, full, on) }
		var end sync.Once
		ended := func(reason string) {
			end.Do(func() {
				t.reason = reason
				close(t.done)
			})
		}
		started := func(err error) {
			if err != nil {
				// refused: this turn never held the conversation, and is
				// over before its client hears why, so that a retry does
				// not find it running here (a 409 naming it)
				c.mu.Lock()
				if c.turn == t {
					c.turn = nil
				}
				c.mu.Unlock()
				ended("")
			}
			ch <- err
		}
		reason, claimed := s.runTurn(tctx, a, id, t.id, full, notes, told, run, started, ended)
		if !claimed {
			c.mu.Lock()
			if c.turn == t {
				c.turn = nil
			}
			c.mu.Unlock()
		}
		ended(reason)
	}()
	return t, ch, nil
}

// refusedStart answers a turn that could not start or be queued — 409
// naming the claim's holder or the turn queued, 404, or 500 with failed
// and err — and reports whether it did (false for a nil err).
func refusedStart(w http.ResponseWriter, err error, failed string) bool {
	var held *history.HeldError
	var queued *QueuedError
	var h Held
	h.Error.Status = http.StatusConflict
	switch {
	case errors.As(err, &held):
		h.Error.Message = err.Error()
		h.Error.Holder = &held.Holder
		writeJSON(w, http.StatusConflict, h)
	case errors.As(err, &queued):
		h.Error.Message = err.Error()
		h.Error.Turn = queued.Turn
		writeJSON(w, http.StatusConflict, h)
	case errors.Is(err, history.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, failed+err.Error())
	default:
		return false
	}
	return true
}

// CancelResult is the answer to a cancel: how the turn ended.
type CancelResult struct {
	Turn   string `json:"turn"`
	Reason string `json:"reason"`
}

// cancelWait is how long a cancel waits for its turn to store what it did
// and end before answering 202 instead of 200.
const cancelWait = 10 * time.Second

func (s *Server) cancelTurn(w http.ResponseWriter, r *http.Request) {
	id, tid := r.PathValue("id"), r.PathValue("tid")
	if s.Queue != nil {
		s.cancelQueued(w, r, id, tid)
		return
	}
	s.mu.Lock()
	c := s.convs[id] // looked up, not made: a cancel keeps nothing
	s.mu.Unlock()
	var t *running
	if c != nil {
		c.mu.Lock()
		t = c.turn
		c.mu.Unlock()
	} else if _, ok := s.found(w, r, id); !ok {
		return
	}
	if t == nil || t.id != tid {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no turn %q of conversation %q is running on this server", tid, id))
		return
	}
	if isDone(t.done) {
		writeError(w, http.StatusConflict, fmt.Sprintf("turn %s has already finished (%s)", tid, t.reason))
		return
	}
	t.cancel(errCancelled)
	select {
	case <-t.done:
		writeJSON(w, http.StatusOK, CancelResult{Turn: tid, Reason: t.reason})
	case <-time.After(cancelWait):
		writeJSON(w, http.StatusAccepted, CancelResult{Turn: tid, Reason: "cancelling"})
	case <-r.Context().Done():
	}
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func newTurnID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "turn_" + hex.EncodeToString(b)
}
