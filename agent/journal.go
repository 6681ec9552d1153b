package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// A rewind puts back the workspace files a conversation's tools wrote or
// edited (docs/branches.md "Files go back"). For that each round's calls
// run with a journal (workspace.WithJournal) whenever the agent's store
// keeps files (history.Blobs, shared or not): the write and edit tools
// tell it what they are about to replace, and it keeps both contents in
// the store, by hash under the conversation (history.FileVersionPath),
// before the file changes, then records the change (history.FileChange)
// on the call's result (history.Part.Files), which goes into the history
// with it: kept as the call finishes, appended with the round, answered
// at recovery. It holds no file's bytes once they are kept.
//
// A change is recorded on the result of the call of this round, of this
// conversation, that made it, and only there:
//   - a subagent's calls (agent--delegate) are its own conversation's:
//     its agent gives them a journal of their own, whose results they are
//     recorded on; one of another conversation never reaches this one
//     (tool.ConversationOf), and a child agent whose store keeps no files
//     records none;
//   - a script's calls run under the script's call but with ids of their
//     own, as do a background script's after the round: their changes are
//     not recorded (history.FileChange: scripts are not tracked), and are
//     made all the same;
//   - a call the round has answered already (it ran past its timeout, or
//     the turn was cancelled) may still be running: its changes are
//     refused, since its result, which said it stopped, is stored without
//     them.

// journal is one round's workspace.Journal.
type journal struct {
	blobs  history.Blobs
	ctx    context.Context // the turn's, not cancelled with it: what a call changed is kept all the same
	id     string          // the conversation
	calls  []tool.Call     // the round's
	kept   *versions       // the turn's
	mu     sync.Mutex
	byCall []callFiles
}

// callFiles is what a journal knows of one call of its round.
type callFiles struct {
	files    []history.FileChange // in the order made
	answered bool                 // its result was taken (take): no change is recorded after
}

// versions are the file versions a turn has kept already, by hash: each
// is put in the store once a turn (PutBlob would find it there, at the
// cost of a transaction). It holds hashes only.
type versions struct {
	mu   sync.Mutex
	have map[string]bool
}

// journal returns the journal of a round of calls of conversation id,
// keeping under ctx (not cancelled with the turn), or nil when the
// agent's store keeps no files.
func (a *Agent) journal(ctx context.Context, id string, calls []tool.Call, kept *versions) *journal {
	blobs, ok := a.Store.(history.Blobs)
	if !ok {
		return nil
	}
	if kept == nil {
		kept = &versions{}
	}
	return &journal{blobs: blobs, ctx: ctx, id: id, calls: calls, kept: kept, byCall: make([]callFiles, len(calls))}
}

// into returns ctx carrying j for the round's calls; ctx itself when j is
// nil.
func (j *journal) into(ctx context.Context) context.Context {
	if j == nil {
		return ctx
	}
	return workspace.WithJournal(ctx, j.tell)
}

// take returns the changes of call i, in the order made, and records no
// more of them: its result is being stored.
func (j *journal) take(i int) []history.FileChange {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	c := &j.byCall[i]
	c.answered = true
	return c.files
}

// with is p, the result of call i, with the changes the call made.
func (j *journal) with(p history.Part, i int) history.Part {
	p.Files = j.take(i)
	return p
}

// tell is the workspace.Journal: it keeps what c replaces and what it
// writes, then records the change on its call.
func (j *journal) tell(ctx context.Context, c workspace.Change) error {
	if tool.ConversationOf(ctx) != j.id {
		return nil // another conversation's call: not this journal's to record
	}
	call := tool.CallID(ctx)
	i := j.index(call)
	if i < 0 {
		return nil // a script's call: not tracked
	}
	if j.answered(i) {
		return answeredErr(call)
	}
	fc := history.FileChange{Path: c.Path, Created: !c.Existed}
	var err error
	if c.Existed && c.BeforeKept && len(c.Before) <= history.MaxKeptFile {
		if fc.Before, err = j.keep(c.Before); err != nil {
			return fmt.Errorf("keeping what %s holds in the conversation's store: %w", c.Path, err)
		}
	}
	if len(c.After) <= history.MaxKeptFile {
		if fc.After, err = j.keep(c.After); err != nil {
			return fmt.Errorf("keeping what %s is to hold in the conversation's store: %w", c.Path, err)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	rec := &j.byCall[i]
	if rec.answered {
		return answeredErr(call)
	}
	rec.files = append(rec.files, fc)
	return nil
}

// answeredErr is the error of a change of a call answered already.
func answeredErr(call string) error {
	return fmt.Errorf("call %s has been answered already (it ran past its time, or its turn was stopped), so its changes are no longer made", call)
}

// index is the index of the round's call with id call, -1 when none is.
func (j *journal) index(call string) int {
	if call == "" {
		return -1
	}
	for i, c := range j.calls {
		if c.ID == call {
			return i
		}
	}
	return -1
}

func (j *journal) answered(i int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.byCall[i].answered
}

// keep puts data in the store as a file version of the conversation, once
// a turn, and returns its hash.
func (j *journal) keep(data []byte) (string, error) {
	hash := history.BlobHash(data)
	j.kept.mu.Lock()
	have := j.kept.have[hash]
	j.kept.mu.Unlock()
	if have {
		return hash, nil
	}
	got, err := j.blobs.PutBlob(j.ctx, j.id, history.FileVersionPath(hash), data)
	if err != nil {
		return "", err
	}
	if got != hash {
		return "", fmt.Errorf("the store kept the %d bytes as sha256 %s, not %s", len(data), got, hash)
	}
	j.kept.mu.Lock()
	if j.kept.have == nil {
		j.kept.have = map[string]bool{}
	}
	j.kept.have[hash] = true
	j.kept.mu.Unlock()
	return hash, nil
}
