package agent

import (
	"context"
	"errors"

	"github.com/myelin-run/myelin/history"
)

// AlreadyEnded is the Reason of a Continue whose turn had ended before it
// was called: it did nothing.
const AlreadyEnded = "already_ended"

// Continue finishes the last turn of conversation id, whose prompt is
// stored already (a queued turn: the API stored it, and whoever runs the
// turn — any worker sharing the store — continues it). It is idempotent:
// called again after a turn ended, it does nothing and returns with
// Reason AlreadyEnded; called after a process running the turn died, it
// answers the calls that process left without results (Recover) and goes
// on from what is stored. It stores no user message.
//
// It takes the conversation's claim like Turn, and fails like Turn with a
// *history.HeldError while another writer is alive (or waits, with
// a.Wait). A turn has ended when the last message (Context records aside)
// is an answer without tool calls, or when its rounds are past the round
// limit (the limit's answer is stored). A turn a tool ended
// (tool_end_turn) cannot be told from a round's results: continued after
// the process died between storing them and its caller learning the turn
// ended, it sends one more request.
func (a *Agent) Continue(ctx context.Context, id string, on func(Event)) (TurnResult, error) {
	return a.traced(ctx, id, nil, on)
}

// claimed is Turn (prompt set) and Continue (prompt nil): the turn under
// the conversation's claim, taken first and released after.
func (a *Agent) claimed(ctx context.Context, id string, prompt *string, on func(Event)) (TurnResult, error) {
	if on == nil {
		on = func(Event) {}
	}
	if a.Provider == nil || a.Store == nil || a.Tools == nil {
		return TurnResult{}, errors.New("agent: Provider, Store and Tools must be set")
	}
	cctx, release, err := a.claim(ctx, id, a.Wait, on)
	if err != nil {
		return TurnResult{}, err
	}
	released := false
	defer func() {
		if !released {
			release() // the turn panicked
		}
	}()
	on(Event{Kind: Started})
	tr, err := a.turn(cctx, id, prompt, on)
	if err != nil && cctx.Err() != nil {
		if cause := context.Cause(cctx); errors.Is(cause, history.ErrClaimLost) {
			err = cause
		}
	}
	released = true
	release()
	if unreached := (*unreachedError)(nil); err != nil && errors.As(err, &unreached) {
		return a.drop(ctx, id, tr, unreached.err, on)
	}
	return tr, err
}

// continuingOf reads where the last turn of the conversation st holds
// (answered by Recover already) stands: whether it has ended, and the
// rounds it ran. The turn begins at the last user message that is a
// prompt (no tool results).
func continuingOf(st *readState, maxRounds int) (TurnResult, bool) {
	var tr TurnResult
	start := st.lastPrompt()
	if start < 0 {
		tr.Reason = AlreadyEnded // no prompt: nothing to continue
		return tr, true
	}
	var last *history.Message
	for i := start + 1; i < st.end(); i++ {
		m := st.tail.At(i)
		if m.Role == history.Context {
			continue
		}
		last = m
		if m.Role == history.Assistant {
			if m.Usage != nil {
				tr.Usage.Add(*m.Usage)
			}
			if len(m.ToolCalls()) > 0 {
				tr.Rounds++
			}
		}
	}
	switch {
	case last != nil && last.Role == history.Assistant && len(last.ToolCalls()) == 0:
		tr.Reason, tr.Text = AlreadyEnded, textOf(*last)
		return tr, true
	case tr.Rounds > maxRounds:
		tr.Reason = AlreadyEnded
		return tr, true
	}
	return tr, false
}

// EndCancelled ends the last turn of conversation id, cancelled while no
// process ran it (a queued turn's job cancelled: never taken, or given
// back after its worker died mid-round), so that the conversation stays
// valid: under the conversation's claim it answers the calls a dead
// worker left (Recover) and, unless the turn had ended, stores the cut
// answer (CutAnswer) to its prompt or last results. It runs no model and
// needs only a.Store (a.Tools, when set, lets idempotent calls run again).
// It fails with a *history.HeldError, storing nothing, while another
// writer is alive.
func (a *Agent) EndCancelled(ctx context.Context, id string) error {
	if a.Store == nil {
		return errors.New("agent: Store must be set")
	}
	ctx, release, err := a.claim(ctx, id, false, func(Event) {})
	if err != nil {
		return err
	}
	defer release()
	if _, err := a.recover(ctx, id); err != nil {
		return err
	}
	st, _, err := a.load(ctx, id, false)
	if err != nil {
		return err
	}
	if _, ended := continuingOf(&st, a.roundLimit()); ended {
		return nil
	}
	return a.Store.Append(context.WithoutCancel(ctx), id, CutAnswer(""))
}
