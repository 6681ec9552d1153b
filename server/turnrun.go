package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
)

// afterRefusedStart, when set (by tests only), holds a func runTurn calls
// once a turn that could not start has said why.
var afterRefusedStart atomic.Pointer[func()]

// runTurn runs a turn — run is the agent's Turn or Continue — with its
// events appended to conversation id's log as turn tid's. started is
// called once: with nil when the turn holds the conversation's claim
// (turn.started is logged), or with the error that kept it from starting
// (nothing is logged). It returns how the turn ended (turn.finished's
// reason) and whether it started. notes are emitted as notices after
// turn.started; told, when set, is called once the turn's prompt is
// stored (the restart note it starts with is then told: wakes.go).
// ended, when set, is called with the reason once the turn has ended,
// before turn.finished is logged: a client that starts the next turn as
// soon as it reads turn.finished must not find this one still running.
func (s *Server) runTurn(ctx context.Context, a *agent.Agent, id, tid, prompt string, notes []string, told func(), run func(on func(agent.Event)) (agent.TurnResult, error), started func(error), ended func(reason string)) (string, bool) {
	claimed, begun := false, time.Now()
	stored := 0 // the conversation's messages, once the turn stored one
	// the turn's cost, each request priced on its own as its usage comes
	// (a long-prompt tier is a request's, not the turn's sum)
	var costs []price.Cost
	tr, err := run(func(e agent.Event) {
		switch e.Kind {
		case agent.Started:
			claimed = true
			s.emit(id, EventTurnStarted, turnStartedEvent{Turn: tid, Prompt: prompt})
			for _, n := range notes {
				s.emit(id, EventNotice, noticeEvent{Turn: tid, Kind: string(agent.Notice), Text: n})
			}
			started(nil)
		case agent.Stored:
			if told != nil && e.Message != nil && e.Message.Role == history.User {
				told()
				told = nil
			}
			// numbered from the store's count at the first (the turn
			// holds the claim: no one else appends meanwhile)
			if stored == 0 {
				if conv, err := a.Store.Get(context.WithoutCancel(ctx), id); err == nil {
					stored = conv.Messages - 1
				}
			}
			stored++
			s.emit(id, EventMessageStored, messageStoredEvent{Turn: tid, N: stored, Role: string(e.Message.Role)})
		default:
			if e.Kind == agent.Usage && a.Pricer != nil {
				costs = append(costs, a.Pricer.Cost(a.Model, e.Usage))
			}
			s.emitAgent(id, tid, e)
		}
	})
	if !claimed {
		started(err)
		if f := afterRefusedStart.Load(); f != nil {
			(*f)()
		}
		return "", false
	}
	if rl := rateLimited(ctx); rl != nil && err != nil {
		// a queued turn whose request would wait long at its key's rate
		// limit (ratelimited.go): not ended, back in the queue until then
		s.emit(id, EventNotice, noticeEvent{Turn: tid, Kind: NoticeRateLimited,
			Text: "the turn goes back to the queue until " + rl.Until.UTC().Format("15:04:05") + " UTC, when its key's rate limit allows its request; a worker then goes on with it from what is stored, and other turns run meanwhile"})
		return NoticeRateLimited, true
	}
	if handedBack(ctx) {
		// a queued turn handed back as its server stops (shutdown.go):
		// not ended, its turn.finished is the next worker's
		s.emit(id, EventNotice, noticeEvent{Turn: tid, Kind: NoticeHandedBack,
			Text: "the server running this turn is stopping: the turn goes back to the queue, and another worker goes on with it from what is stored"})
		return NoticeHandedBack, true
	}
	if errors.Is(err, history.ErrClaimLost) && handedOver(ctx) {
		// a queued turn taken over (queue.go): not ended, its
		// turn.finished is its new holder's
		s.emit(id, EventNotice, noticeEvent{Turn: tid, Kind: NoticeClaimLost,
			Text: err.Error() + "; the turn goes on with the writer that took the conversation over"})
		return NoticeClaimLost, true
	}
	fin := turnFinishedEvent{Turn: tid, Reason: tr.Reason, Rounds: tr.Rounds, Usage: usageOf(tr.Usage), Text: tr.Text}
	if a.Pricer != nil {
		fin.Cost = price.Sum(costs...).JSON()
	}
	if err != nil {
		fin.Reason = "error"
		fin.Error = err.Error()
		if cause := context.Cause(ctx); errors.Is(cause, errCancelled) || errors.Is(cause, errClosing) {
			fin.Reason = "cancelled"
			if !errors.Is(err, cause) {
				fin.Error += " (" + cause.Error() + ")"
			}
		}
		s.emit(id, "error", errorEvent{Turn: tid, Message: fin.Error})
	}
	if ended != nil {
		ended(fin.Reason)
	}
	// what the turn's calls asked and ended with them is told first
	s.asks.toldBefore(id, tid)
	// logged before its watchers are told: a client (or a test) that
	// reads turn.finished then the log finds the turn's line there
	s.logTurn(ctx, id, fin, time.Since(begun))
	s.emit(id, "turn.finished", fin)
	return fin.Reason, true
}
