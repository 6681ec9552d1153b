package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/myelin-run/myelin/agent"
)

// budgetError is why a turn's budgets cannot be held by the agent that
// would run it: a budget above the server's, or a cost budget with no
// price for the turn's model.
type budgetError struct{ err error }

func (e *budgetError) Error() string { return e.err.Error() }
func (e *budgetError) Unwrap() error { return e.err }

// budgets checks in's budgets and sets those it gives on a, which must
// be the turn's own, its budgets the server's: each may lower the
// server's, not raise it. A budget above the server's is refused, or —
// clamp, for a queued turn that a worker runs under its own bounds, after
// the server that queued it checked it against its own — lowered to the
// server's. A cost budget needs prices for a's model (a's Pricer: on a
// worker, its own price table), which the turn would otherwise fail on
// once started. Its error is a *budgetError.
func (in TurnInput) budgets(a *agent.Agent, clamp bool) error {
	if in.MaxTurnTokens < 0 || in.MaxCost < 0 || in.MaxConversationCost < 0 {
		return &budgetError{fmt.Errorf("max_turn_tokens %d, max_cost %g, max_conversation_cost %g: give a positive budget (tokens, US dollars), or leave it out for the server's", in.MaxTurnTokens, in.MaxCost, in.MaxConversationCost)}
	}
	if in.MaxTurnTokens > 0 {
		if srv := a.MaxTurnTokens; srv > 0 && in.MaxTurnTokens > srv && !clamp {
			return &budgetError{fmt.Errorf("max_turn_tokens %d is above the server's budget of %d tokens a turn (serve --max-turn-tokens): give at most %d, or leave it out for the server's", in.MaxTurnTokens, srv, srv)}
		}
		if srv := a.MaxTurnTokens; srv == 0 || in.MaxTurnTokens < srv {
			a.MaxTurnTokens = in.MaxTurnTokens
		}
	}
	for _, b := range []struct {
		name, flag string
		in         float64
		srv        *float64
	}{{"max_cost", "--max-cost", in.MaxCost, &a.MaxCost}, {"max_conversation_cost", "--max-conversation-cost", in.MaxConversationCost, &a.MaxConversationCost}} {
		if b.in == 0 {
			continue
		}
		if *b.srv > 0 && b.in > *b.srv && !clamp {
			return &budgetError{fmt.Errorf("%s %g is above the server's budget of $%g (serve %s): give at most %g, or leave it out for the server's", b.name, b.in, *b.srv, b.flag, *b.srv)}
		}
		if *b.srv == 0 || b.in < *b.srv {
			*b.srv = b.in
		}
	}
	if err := a.CheckBudgets(); err != nil {
		return &budgetError{fmt.Errorf("max_turn_tokens, max_cost, max_conversation_cost: %w", err)}
	}
	return nil
}

// unheldQueued meets err, why queued turn t of conversation conv could
// not be given an agent on this worker (agentFor). A *budgetError — the
// worker cannot hold the turn's budgets with its own price table — ends
// the turn here, not tried again on every attempt: the conversation is
// left valid (agent.EndCancelled: the prompt answered with a cut answer)
// and turn.finished says why, with reason error; nil then. Any other
// error is err, for the job to be tried again.
func (s *Server) unheldQueued(ctx context.Context, conv string, t QueuedTurn, err error) error {
	var be *budgetError
	if !errors.As(err, &be) {
		return err
	}
	if eerr := s.Agent.EndCancelled(ctx, conv); eerr != nil {
		return fmt.Errorf("ending turn %s of conversation %s, whose budgets this worker cannot hold (%v): %w", t.Turn, conv, err, eerr)
	}
	s.emit(conv, EventTurnFinished, turnFinishedEvent{Turn: t.Turn, Reason: "error",
		Error: "the worker that took the turn cannot hold its budgets, so it did not run it: " + err.Error()})
	return nil
}
