package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// ClaimPoll is how often a turn that waits for a conversation (Agent.Wait)
// tries its claim again.
const ClaimPoll = 250 * time.Millisecond

// claim takes conversation id's claim for a new holder — waiting for it
// when wait is set — and starts its heartbeat. It returns the context the
// turn writes under (history.Writing; cancelled, with an error wrapping
// history.ErrClaimLost as its cause, when the claim is lost) and the
// function that stops the heartbeat and releases the claim.
func (a *Agent) claim(ctx context.Context, id string, wait bool, on func(Event)) (context.Context, func(), error) {
	lease := a.Lease
	if lease <= 0 {
		lease = history.DefaultLease
	}
	h := history.NewHolder()
	var told history.Holder
	for {
		got, err := a.Store.Claim(ctx, id, h, lease)
		if err == nil {
			h = got
			break
		}
		var held *history.HeldError
		if !wait || !errors.As(err, &held) {
			return ctx, nil, err
		}
		if held.Holder.Token != told.Token {
			told = held.Holder
			on(Event{Kind: Waiting, Text: fmt.Sprintf("waiting for conversation %s: another writer is advancing it (%s)", id, held.Holder)})
		}
		select {
		case <-ctx.Done():
			return ctx, nil, fmt.Errorf("waiting for conversation %s, held by %s: %w", id, held.Holder, context.Cause(ctx))
		case <-time.After(ClaimPoll):
		}
	}
	// the record read once under the claim: the conversation may have been
	// made again since the last turn
	a.recheckRecord(id)
	tctx, release := history.Holding(ctx, a.Store, id, h, lease) // the turn stops when the claim is lost
	return tctx, release, nil
}

// Recovery says what Recover did with the calls a stopped process left
// without results.
type Recovery struct {
	// Finished calls had ended before the process stopped: each is
	// answered with its own result, kept as it finished.
	Finished int
	// Rerun calls had not, and their tools may run again
	// (tool.Tool.Rerun): each was run again, and is answered with what
	// that run gave.
	Rerun int
	// Interrupted calls had not, and were not run again: each is answered
	// with the Interrupted error result (with why, when its tool may run
	// again but could not be: it is gone, or its input no longer passes).
	Interrupted int
}

// Recover answers the tool calls of a conversation's last message that have
// no results — the process died during their round — so that the
// conversation is valid again: a call that had finished with the result
// kept for it (history.Store.Keep); a call whose tool may run again
// (tool.Tool.Rerun) by running it again, through the dispatcher as in any
// round — its input checked, its result converted, capped, kept as it
// finishes and stored synced before anything is sent; the others with
// error results saying they were interrupted. No other tool is run. It
// does so only under the conversation's claim, which shows that the
// round's writer is gone: under a ctx holding it (a turn's), or by taking
// it for the while — and then a live writer's claim makes it fail with a
// *history.HeldError and answer nothing.
func (a *Agent) Recover(ctx context.Context, id string) (Recovery, error) {
	if _, ok := history.WriterOf(ctx); !ok {
		cctx, release, err := a.claim(ctx, id, false, func(Event) {})
		if err != nil {
			return Recovery{}, err
		}
		defer release()
		ctx = cctx
	}
	return a.recover(ctx, id)
}

func (a *Agent) recover(ctx context.Context, id string) (Recovery, error) {
	var rec Recovery
	// Read whatever ctx says: the turn holds the claim and has said it
	// started, so a cancel now ends it after what it did is kept.
	read := context.WithoutCancel(ctx)
	st, _, err := a.load(read, id, false)
	if err != nil {
		return rec, err
	}
	last, ok := st.lastMessage() // a record is no answer: it looks past them
	calls := last.ToolCalls()
	if !ok || last.Role != history.Assistant || len(calls) == 0 {
		return rec, nil
	}
	kept, err := a.Store.Kept(read, id)
	if err != nil {
		return rec, err
	}
	byCall := make(map[string]history.Part, len(kept))
	for _, p := range kept {
		byCall[p.CallID] = p
	}
	answer := history.Message{Role: history.User, Parts: make([]history.Part, len(calls))}
	var again []int // the calls run again, by index in calls
	g := a.gate(ctx)
	rulings := map[string]tool.Ruling{} // of the calls run again, by call id
	for i, c := range calls {
		if p, ok := byCall[c.CallID]; ok {
			answer.Parts[i] = p
			rec.Finished++
			continue
		}
		why, ok := a.mayRunAgain(c)
		var perm *permission.Record
		if ok && g != nil {
			// run again only if the policy allows it outright: a call
			// that was waiting for a person's answer when the process
			// stopped is never run without one
			r, err := g.Check(ctx, tool.Question{Tool: a.Tools.Get(c.Name), Call: tool.Call{ID: c.CallID, Name: c.Name, Input: orEmpty(callInput(c))}, NoAsk: true})
			switch {
			case err != nil:
				return Recovery{}, fmt.Errorf("recovering conversation %s: checking call %s of %s against the permission policy: %w", id, c.CallID, c.Name, err)
			case !r.Allowed():
				ok, perm = false, &r.Record
				why = fmt.Sprintf(": its tool may run again, but the permission policy does not allow it without asking (%s), and no one is asked when a conversation is recovered", r.Record.Reason)
			default:
				rulings[c.CallID] = r
			}
		}
		if ok {
			again = append(again, i)
			continue
		}
		answer.Parts[i] = history.Part{Type: history.ToolResultPart, CallID: c.CallID, Text: Interrupted + why, IsError: true, Permission: perm}
		rec.Interrupted++
	}
	if len(again) > 0 {
		outs, jr := a.runAgain(ctx, id, calls, again, rulings)
		for j, i := range again {
			answer.Parts[i] = jr.with(resultPart(calls[i].CallID, outs[j]), j)
			if r, ok := rulings[calls[i].CallID]; ok {
				answer.Parts[i].Permission = &r.Record
			}
		}
		rec.Rerun = len(again)
	}
	if err := a.Store.Append(context.WithoutCancel(ctx), id, answer); err != nil {
		return Recovery{}, err
	}
	return rec, nil
}

// mayRunAgain says whether interrupted call c is run again: its tool may
// run again (tool.Tool.Rerun) and would run the call now. When it may not,
// why is what the Interrupted text adds: nothing for a tool that may not
// run again, the reason when it may but the call could not run.
func (a *Agent) mayRunAgain(c history.Part) (why string, ok bool) {
	var t *tool.Tool
	if a.Tools != nil {
		t = a.Tools.Get(c.Name)
	}
	switch {
	case t == nil:
		return fmt.Sprintf(": there is no tool named %q now", c.Name), false
	case !t.Rerun:
		return "", false
	}
	if err := t.Check(callInput(c)); err != nil {
		return fmt.Sprintf(": its input does not pass %s's input schema now: %v", c.Name, err), false
	}
	return "", true
}

// runAgain runs calls[again...] again as a round of their own, each
// result kept as it finishes (so that a second stop keeps what finished),
// and returns their outputs in the order of again, and the journal of the
// files they wrote or edited (journal.go; nil when the store keeps no
// files). The round bound is that of these calls alone: the others'
// results are already stored.
//
// The calls were checked already (rulings, by call id, when there is a
// gate): the round's gate gives those rulings, and the calls the calls
// make are checked by the agent's gate, on the context.
func (a *Agent) runAgain(ctx context.Context, id string, calls []history.Part, again []int, rulings map[string]tool.Ruling) ([]result.Output, *journal) {
	tcalls := make([]tool.Call, len(again))
	for j, i := range again {
		tcalls[j] = tool.Call{ID: calls[i].CallID, Name: calls[i].Name, Input: callInput(calls[i])}
	}
	k := newKeeper(a.Store, history.Lazy(context.WithoutCancel(ctx)), id, len(tcalls))
	tctx, env := a.files(ctx, id) // a read of a spill file made on another host fetches it (files.go)
	tctx = tool.WithGate(tctx, a.Gate)
	j := a.journal(context.WithoutCancel(ctx), id, tcalls, nil)
	tctx = j.into(tctx)
	d := &tool.Dispatcher{Tools: a.Tools, Env: env, Timeout: a.ToolTimeout,
		Converted: func(i int, c tool.Call, o result.Output) {
			p := j.with(resultPart(c.ID, o), i)
			if r, ok := rulings[c.ID]; ok {
				p.Permission = &r.Record
			}
			k.keep(p)
		}}
	if tool.GateOf(tctx) != nil {
		d.Gate = decided(rulings)
	}
	return d.Round(tctx, tcalls), j
}

// decided is the gate of the calls a recovery runs again: they were
// checked already, and it gives each its ruling; a call it has none for
// is denied.
type decided map[string]tool.Ruling

func (d decided) Check(_ context.Context, q tool.Question) (tool.Ruling, error) {
	if r, ok := d[q.Call.ID]; ok {
		return r, nil
	}
	return tool.Ruling{Record: permission.Record{Decision: permission.Deny.String(), By: "nobody", Reason: "it was not checked when the conversation was recovered"}}, nil
}

// gate is the gate the agent's calls under ctx are checked by: its own,
// else the one ctx carries (a subagent's, its parent's).
func (a *Agent) gate(ctx context.Context) tool.Gate {
	if a.Gate != nil {
		return a.Gate
	}
	return tool.GateOf(ctx)
}

// orEmpty is input, or {} when it is empty or JSON null, as the
// dispatcher gives a call's input to its gate.
func orEmpty(input json.RawMessage) json.RawMessage {
	if in := strings.TrimSpace(string(input)); in == "" || in == "null" {
		return json.RawMessage("{}")
	}
	return input
}

// callInput is a stored call's input as the dispatcher takes it: a call
// whose input was not JSON keeps its text, which the dispatcher refuses,
// naming the problem.
func callInput(c history.Part) json.RawMessage {
	if c.Input == nil && c.Text != "" {
		return json.RawMessage(c.Text)
	}
	return c.Input
}

// String says what was recovered, for people.
func (r Recovery) String() string {
	var said []string
	if r.Finished > 0 {
		said = append(said, fmt.Sprintf("%d tool call(s) had finished and keep their own results", r.Finished))
	}
	if r.Rerun > 0 {
		said = append(said, fmt.Sprintf("ran %d tool call(s) again, whose tools may run again (a second run has no effect beyond its result)", r.Rerun))
	}
	if r.Interrupted > 0 || len(said) == 0 {
		said = append(said, fmt.Sprintf("answered %d tool call(s) interrupted when the last process stopped; they were not run again", r.Interrupted))
	}
	s := strings.Join(said, "; ")
	if r.Finished+r.Rerun > 0 {
		s = "the last process stopped during a round: " + s
	}
	return s
}
