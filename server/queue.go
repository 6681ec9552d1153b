package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/telemetry"
)

// TurnQueue is where a server puts the turns it starts when workers run
// them (Server.Queue): package worker's, on Postgres with River. It must
// decide in the shared store, never in one process's memory, whether a
// conversation has a turn queued or running.
type TurnQueue interface {
	// Enqueue stores prompt as conversation conv's next message and
	// queues turn t in one transaction: both or neither. A conversation
	// with a turn queued or running already is refused with a
	// *QueuedError naming that turn, storing nothing.
	Enqueue(ctx context.Context, conv string, t QueuedTurn, prompt history.Message) error
	// Cancel cancels turn tid of conversation conv wherever it runs or
	// waits: found is false when no such turn is queued or running, and
	// before true when it was cancelled before a worker took it (its
	// prompt answered as cut; no worker will report it).
	Cancel(ctx context.Context, conv, tid string) (found, before bool, err error)
	// Pending names conversation conv's turn queued or running, "" when
	// it has none.
	Pending(ctx context.Context, conv string) (string, error)
}

// QueuedTurn is what a queued turn's job carries: its id and its own
// settings (TurnInput's), never content — the prompt is in the store.
type QueuedTurn struct {
	Turn      string `json:"turn"`
	Model     string `json:"model,omitempty"`
	MaxRounds int    `json:"max_rounds,omitempty"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	// the turn's budgets (TurnInput's)
	MaxTurnTokens       int     `json:"max_turn_tokens,omitempty"`
	MaxCost             float64 `json:"max_cost,omitempty"`
	MaxConversationCost float64 `json:"max_conversation_cost,omitempty"`
	// TraceParent is the W3C traceparent of the request that queued the
	// turn (telemetry.TraceParent): the worker that runs it — and each
	// that continues it after a hand-over — continues that trace. "" when
	// telemetry was off, and in the jobs of older versions.
	TraceParent string `json:"trace_parent,omitempty"`
}

// queuedTurn is the job of turn id, with in's settings.
func queuedTurn(id string, in TurnInput) QueuedTurn {
	return QueuedTurn{Turn: id, Model: in.Model, MaxRounds: in.MaxRounds, MaxTokens: in.MaxTokens,
		MaxTurnTokens: in.MaxTurnTokens, MaxCost: in.MaxCost, MaxConversationCost: in.MaxConversationCost}
}

// input is the TurnInput t carries the settings of (no prompt).
func (t QueuedTurn) input() TurnInput {
	return TurnInput{Model: t.Model, MaxRounds: t.MaxRounds, MaxTokens: t.MaxTokens,
		MaxTurnTokens: t.MaxTurnTokens, MaxCost: t.MaxCost, MaxConversationCost: t.MaxConversationCost}
}

// QueuedError is the error for a turn started on a conversation that has
// one queued or running already (one turn per conversation at a time).
type QueuedError struct {
	Conversation, Turn string
}

// Error says which turn is queued, and what to do.
func (e *QueuedError) Error() string {
	return fmt.Sprintf("conversation %s has turn %s queued or running; cancel it or wait for its turn.finished event", e.Conversation, e.Turn)
}

// startQueued is startTurn when workers run the turns: the prompt is
// stored with the turn's job, and the answer says where to watch it.
func (s *Server) startQueued(w http.ResponseWriter, r *http.Request, id string, in TurnInput) {
	from, err := s.log.Last(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the conversation's events: "+err.Error())
		return
	}
	t := queuedTurn(newTurnID(), in)
	t.TraceParent = telemetry.TraceParent(r.Context())
	prompt, told := s.goneNote(id, in.Prompt)
	user := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: result.WellFormed(prompt)}}}
	err = s.Queue.Enqueue(r.Context(), id, t, user)
	if err == nil && told != nil {
		told()
	}
	if !refusedStart(w, err, "the turn could not be queued: ") {
		writeJSON(w, http.StatusAccepted, TurnStarted{Turn: t.Turn, Conversation: id,
			Events: fmt.Sprintf("/v1/conversations/%s/events?after=%d", id, from)})
	}
}

// cancelQueued is cancelTurn when workers run the turns: the cancel goes
// to whichever runs it, and the turn's turn.finished says how it ended.
func (s *Server) cancelQueued(w http.ResponseWriter, r *http.Request, id, tid string) {
	found, before, err := s.Queue.Cancel(r.Context(), id, tid)
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("cancelling turn %s: %v", tid, err))
	case !found:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no turn %q of conversation %q is queued or running", tid, id))
	case before:
		s.emit(id, EventTurnFinished, turnFinishedEvent{Turn: tid, Reason: "cancelled", Error: "cancelled before a worker took it"})
		writeJSON(w, http.StatusOK, CancelResult{Turn: tid, Reason: "cancelled"})
	default:
		writeJSON(w, http.StatusAccepted, CancelResult{Turn: tid, Reason: "cancelling"})
	}
}

// RunQueued runs queued turn t of conversation conv (TurnQueue): the
// worker that took its job calls it, on any process sharing the store.
// It continues the turn from what is stored (agent.Continue: the
// interrupted calls of a process that died are answered, a turn that
// ended is left), with its events in the server's log. It returns nil
// when the turn ended here (or was cancelled, or its budgets could not be
// held with this worker's price table: unheldQueued); it fails — and the
// job is to be tried again later — when the turn could not start (a
// *history.HeldError while another writer is alive) or failed for another
// reason than its context. A turn whose claim was lost midway (another
// writer took the conversation over: this worker was given up for dead)
// has not ended: RunQueued fails with an error wrapping
// history.ErrClaimLost, and reports no turn.finished (a claim_lost notice
// instead): whoever holds the conversation now goes on with the turn,
// and its job — tried again — finds it ended, or takes it up if that
// writer died too. It must never report such a turn ended. Likewise a
// turn handed back as the server stops (Shutdown), or started after it
// began to stop: RunQueued fails with an error wrapping
// agent.ErrHandedOver, reports a handed_back notice instead of
// turn.finished, and the job is to be put back in the queue at once for
// another worker to continue. A turn whose request would wait at its key's
// rate limiter for more than HoldOver is stopped the same way, reporting
// a rate_limited notice: RunQueued fails with a *RateLimitedError (which
// wraps agent.ErrHandedOver) saying until when, and the job is to be put
// back in the queue until then.
func (s *Server) RunQueued(ctx context.Context, conv string, t QueuedTurn) error {
	s.init()
	a, err := s.agentFor(t.input(), true)
	if err != nil {
		return s.unheldQueued(ctx, conv, t, err)
	}
	prompt, err := lastPrompt(ctx, a.Store, conv)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithCancelCause(telemetry.WithTraceParent(ctx, t.TraceParent))
	defer cancel(nil)
	done, ok := s.addQueued(cancel)
	if !ok {
		return fmt.Errorf("turn %s of conversation %s, not run: %w", t.Turn, conv, agent.ErrHandedOver)
	}
	defer done()
	a, notes := s.withTools(a, conv)
	defer s.runsQueued(conv)()
	tctx = turnContext(context.WithValue(tctx, handedOverKey{}, true), conv, t.Turn, a)
	stop := context.AfterFunc(ctx, func() { cancel(errCancelled) })
	defer stop()
	var failed error
	run := func(on func(agent.Event)) (agent.TurnResult, error) {
		tr, err := a.Continue(tctx, conv, holdingOver(on, cancel))
		failed = err
		return tr, err
	}
	var notStarted error
	if _, ok := s.runTurn(tctx, a, conv, t.Turn, prompt, notes, nil, run, func(err error) { notStarted = err }, nil); !ok {
		return notStarted
	}
	if rl := rateLimited(tctx); rl != nil && failed != nil {
		return fmt.Errorf("turn %s of conversation %s: %w", t.Turn, conv, rl)
	}
	if handedBack(tctx) {
		return fmt.Errorf("turn %s of conversation %s: %w", t.Turn, conv, agent.ErrHandedOver)
	}
	if errors.Is(failed, history.ErrClaimLost) {
		return fmt.Errorf("turn %s of conversation %s: %w; the turn is left to whoever holds it now", t.Turn, conv, failed)
	}
	if failed != nil && ctx.Err() == nil {
		return failed
	}
	return nil
}

// handedOverKey marks the context of a queued turn (RunQueued): when its
// claim is lost, another writer goes on with it, so runTurn reports the
// loss as a claim_lost notice, not as the turn's turn.finished.
type handedOverKey struct{}

// handedOver reports whether a turn run under ctx is left to whoever took
// its claim when it loses it (RunQueued's).
func handedOver(ctx context.Context) bool {
	v, _ := ctx.Value(handedOverKey{}).(bool)
	return v
}

// NoticeClaimLost is the kind of the notice a queued turn's worker
// reports instead of turn.finished when it lost the conversation's claim
// midway: the turn goes on with whoever took it over.
const NoticeClaimLost = "claim_lost"

// lastPrompt is the text of conversation conv's last prompt (a user
// message without tool results), for turn.started.
func lastPrompt(ctx context.Context, store history.Store, conv string) (string, error) {
	msgs, err := store.Messages(ctx, conv)
	if err != nil {
		return "", err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != history.User {
			continue
		}
		text, results := "", false
		for _, p := range msgs[i].Parts {
			results = results || p.Type == history.ToolResultPart
			if p.Type == history.TextPart {
				text += p.Text
			}
		}
		if !results {
			return text, nil
		}
	}
	return "", nil
}

// EndQueued ends queued turn t of conversation conv, which was cancelled
// while the worker running it was dead (TurnQueue's workers call it
// instead of RunQueued): agent.EndCancelled leaves the conversation valid
// — the dead worker's calls answered, then the cut answer — and the
// turn's turn.finished says it was cancelled. It runs no model.
func (s *Server) EndQueued(ctx context.Context, conv string, t QueuedTurn) error {
	s.init()
	a, err := s.agentFor(t.input(), true)
	if be := (*budgetError)(nil); errors.As(err, &be) {
		a, err = s.Agent, nil // ending it runs no model: its budgets do not matter
	}
	if err != nil {
		return err
	}
	if err := a.EndCancelled(ctx, conv); err != nil {
		return fmt.Errorf("ending cancelled turn %s of conversation %s: %w", t.Turn, conv, err)
	}
	s.emit(conv, EventTurnFinished, turnFinishedEvent{Turn: t.Turn, Reason: "cancelled", Error: "cancelled while the worker running it was stopped"})
	return nil
}
