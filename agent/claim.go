package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/myelin-run/myelin/history"
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
	tctx, cancel := context.WithCancelCause(history.Writing(ctx, h))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(max(lease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			err := a.Store.Renew(context.WithoutCancel(tctx), id, h, lease)
			if errors.Is(err, history.ErrClaimLost) {
				cancel(err) // the turn stops; its writes would be refused anyway
				return
			}
			// another error (a store locked for long) is tried again at
			// the next beat: the lease is three beats long
		}
	})
	release := func() {
		close(stop)
		wg.Wait()
		cancel(nil)
		_ = a.Store.Release(context.WithoutCancel(ctx), id, h)
	}
	return tctx, release, nil
}

// Recovery says what Recover did with the calls a stopped process left
// without results.
type Recovery struct {
	// Finished calls had ended before the process stopped: each is
	// answered with its own result, kept as it finished.
	Finished int
	// Interrupted calls had not: each is answered with the Interrupted
	// error result.
	Interrupted int
}

// Recover answers the tool calls of a conversation's last message that have
// no results — the process died during their round — so that the
// conversation is valid again: a call that had finished with the result
// kept for it (history.Store.Keep), the others with error results saying
// they were interrupted. No tool is run. It does so only under the
// conversation's claim, which shows that the round's writer is gone: under
// a ctx holding it (a turn's), or by taking it for the while — and then a
// live writer's claim makes it fail with a *history.HeldError and answer
// nothing.
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
	msgs, err := a.Store.Messages(ctx, id)
	if err != nil || len(msgs) == 0 {
		return rec, err
	}
	last := msgs[len(msgs)-1]
	for i := len(msgs) - 2; last.Role == history.Context && i >= 0; i-- {
		last = msgs[i] // a record is no answer: look past it
	}
	calls := last.ToolCalls()
	if last.Role != history.Assistant || len(calls) == 0 {
		return rec, nil
	}
	kept, err := a.Store.Kept(ctx, id)
	if err != nil {
		return rec, err
	}
	byCall := make(map[string]history.Part, len(kept))
	for _, p := range kept {
		byCall[p.CallID] = p
	}
	answer := history.Message{Role: history.User}
	for _, c := range calls {
		if p, ok := byCall[c.CallID]; ok {
			answer.Parts = append(answer.Parts, p)
			rec.Finished++
			continue
		}
		answer.Parts = append(answer.Parts, history.Part{Type: history.ToolResultPart, CallID: c.CallID, Text: Interrupted, IsError: true})
		rec.Interrupted++
	}
	if err := a.Store.Append(context.WithoutCancel(ctx), id, answer); err != nil {
		return Recovery{}, err
	}
	return rec, nil
}

// String says what was recovered, for people.
func (r Recovery) String() string {
	s := fmt.Sprintf("answered %d tool call(s) interrupted when the last process stopped; they were not run again", r.Interrupted)
	if r.Finished > 0 {
		s = fmt.Sprintf("the last process stopped during a round: %d tool call(s) had finished and keep their own results; ", r.Finished) + s
	}
	return s
}
