package agent

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// round runs one round of calls — the n tool calls of the answer m — and
// stores their results before anything is sent: each kept as it finishes
// (t.keeper), all of them together under t.kept. The gate (Agent.Gate, or
// the one the turn's context carries) checks each call before it runs,
// and its decision is stored with the call's result, as are the files it
// wrote or edited (journal.go). It reports whether
// a tool ended the turn.
func (t *turning) round(m history.Message, n int) (endTurn bool, err error) {
	a := t.a
	tcalls := make([]tool.Call, 0, n)
	for _, c := range m.Parts {
		if c.Type != history.ToolCallPart {
			continue
		}
		tcalls = append(tcalls, tool.Call{ID: c.CallID, Name: c.Name, Input: callInput(c)})
		t.on(Event{Kind: ToolCall, Call: c})
	}
	// each call's time, set once by the dispatcher (Finished) before the
	// round returns
	elapsed := make([]time.Duration, n)
	k := t.keeper
	k.start(n)
	tctx, env := a.files(t.ctx, t.id) // a shared store keeps the files they save (files.go)
	tctx = tool.WithGate(tctx, a.Gate)
	j := a.journal(t.kept, t.id, tcalls, &t.versions) // what they write and edit is kept for a rewind (journal.go)
	tctx = j.into(tctx)
	// each call's permission record, set by the gate before any call
	// starts (Ruled); none without a gate
	var recs []*permission.Record
	d := &tool.Dispatcher{Tools: a.Tools, Env: env, Timeout: a.ToolTimeout, Workers: t.workers,
		Finished:  func(i int, _ tool.Call, e time.Duration) { elapsed[i] = e },
		Converted: func(i int, c tool.Call, o result.Output) { k.keep(withRecord(j.with(resultPart(c.ID, o), i), recs, i)) }}
	if tool.GateOf(tctx) != nil {
		recs = make([]*permission.Record, n)
		d.Ruled = func(i int, _ tool.Call, rec permission.Record) { recs[i] = &rec }
	}
	outs := d.Round(tctx, tcalls)
	answer := history.Message{Role: history.User, Parts: make([]history.Part, len(outs))}
	for i, o := range outs {
		answer.Parts[i] = withRecord(j.with(resultPart(tcalls[i].ID, o), i), recs, i)
		endTurn = endTurn || o.EndTurn
	}
	// Committed even when ctx is cancelled: the results are what happened.
	if err := t.store(t.kept, answer); err != nil {
		return false, err
	}
	i := 0
	for _, c := range m.Parts {
		if c.Type == history.ToolCallPart {
			t.on(Event{Kind: ToolResult, Call: c, Output: outs[i], Elapsed: elapsed[i], Permission: answer.Parts[i].Permission})
			i++
		}
	}
	return endTurn, nil
}

// keeper keeps each finished call's result at once, without a disk sync
// (contract §7: durable as soon as the call finishes; a crash of the process
// keeps it); the round's one synced append replaces them. Results that
// finish while a keep is being committed go together in the next one, so
// that calls finishing at once cost one commit, not one each (a commit is
// ~0.2 ms of CPU). The last call of a round to finish is not kept: the
// round's own commit, which follows at once, stores it (so a round of one
// call costs no keep at all). For the same reason results still queued when
// the last call finishes are not kept either: the round's commit follows
// as soon as the keep in flight returns, and stores them all (a round of
// calls finishing at once costs one keep, not two). Before each commit the
// committing goroutine yields (runtime.Gosched, a few times for each call
// still running), so that calls finishing at the same moment but not yet
// scheduled — on a busy machine, where a round's calls run one after
// another on one thread, all of them — join that commit instead of each
// paying its own. A yield delays a keep by the other runnable goroutines'
// turns, never by a timer (with nothing else to run it returns at once),
// and when it lets the round's last call finish, nothing is kept at all.
// The goroutine that commits drains the queue before its call's Converted
// returns, so when the round returns nothing is pending. A keep that fails
// costs only that durability: the round's append, which would fail the
// same way, says why.
type keeper struct {
	store   history.Store
	ctx     context.Context
	id      string
	mu      sync.Mutex
	running int // calls of the round not finished yet
	pending []history.Part
	spare   []history.Part // the other buffer: pending and the batch being committed take turns
	busy    bool
}

// newKeeper is the keeper of a round of n calls of conversation id, which
// keeps under ctx. A turn's rounds share one (start).
func newKeeper(store history.Store, ctx context.Context, id string, n int) *keeper {
	return &keeper{store: store, ctx: ctx, id: id, running: n}
}

// start readies k for a round of n calls. The round before has returned,
// so nothing of it is pending or being committed: its buffers are reused.
func (k *keeper) start(n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running = n
	k.pending = k.pending[:0]
}

func (k *keeper) keep(p history.Part) {
	k.mu.Lock()
	if k.running--; k.running == 0 {
		k.mu.Unlock() // the last: the round's commit stores it now
		return
	}
	if k.pending == nil {
		// made on the first keep, for every call that may still be
		// kept: the round's keeps append into it and spare in turn
		k.pending = make([]history.Part, 0, k.running+1)
	}
	k.pending = append(k.pending, p)
	if k.busy {
		k.mu.Unlock()
		return
	}
	k.busy = true
	for len(k.pending) > 0 {
		// calls finishing now join this commit
		for range min(yieldsPerCall*k.running, maxYields) {
			k.mu.Unlock()
			runtime.Gosched()
			k.mu.Lock()
		}
		if k.running == 0 {
			k.pending = k.pending[:0] // every call has finished: the round's commit stores these
			break
		}
		batch := k.pending
		k.pending = k.spare[:0]
		k.mu.Unlock()
		_ = k.store.Keep(k.ctx, k.id, batch...)
		k.mu.Lock()
		k.spare = batch[:0] // the store keeps no slice it is given
	}
	k.busy = false
	k.mu.Unlock()
}

// yieldsPerCall and maxYields are how many times a keep yields before its
// commit for each call of the round still running, and at most
// (keeper.keep): a call takes a few scheduling steps to finish (its
// handler's goroutine, its conversion).
const yieldsPerCall, maxYields = 4, 64

// withRecord is p with the permission record of call i, when recs has
// one.
func withRecord(p history.Part, recs []*permission.Record, i int) history.Part {
	if i < len(recs) {
		p.Permission = recs[i]
	}
	return p
}

// resultPart is the stored part of a call's output.
func resultPart(callID string, o result.Output) history.Part {
	return history.Part{Type: history.ToolResultPart, CallID: callID,
		Text: o.Text, IsError: o.IsError, Images: o.Images, SpillPath: o.SpillPath}
}
