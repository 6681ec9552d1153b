package rewind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/myelin-run/myelin/history"
)

// ErrNothingToUndo is wrapped by Undo's error for a conversation that
// holds no prompt: there is no turn to take back.
var ErrNothingToUndo = errors.New("there is no turn to undo: the conversation holds no prompt")

// ErrNothingToRedo is wrapped by Redo's error for a conversation none of
// whose branches goes on from its end: nothing was undone since it last
// changed.
var ErrNothingToRedo = errors.New("there is nothing to redo: no branch of the conversation goes on from where it ends")

// ErrNoBranches is wrapped by the error of a rewind or a switch on a
// store that keeps no branches (it does not implement history.Brancher).
var ErrNoBranches = errors.New("the history store keeps no branches")

// brancherOf is store as a Brancher, or an error naming what was being
// done.
func brancherOf(store history.Store, doing string) (history.Brancher, error) {
	b, ok := store.(history.Brancher)
	if !ok {
		return nil, fmt.Errorf("%s: %w", doing, ErrNoBranches)
	}
	return b, nil
}

// Rewind takes conversation id back to its first at messages through the
// store's Brancher.Rewind, which keeps what followed as a new branch and
// returns its record. With opt.Files it first checks the workspace files
// the tools changed in the messages after at, then, the conversation
// rewound, puts back those that are as the tools left them (Files says
// which). It reads, checks and moves under id's claim (Hold, unless ctx
// writes as its holder already), so that no turn changes id between its
// read and its move; while another writer holds id (a turn running: a
// *history.HeldError), nothing is read and no file is touched. Without
// opt.Files it reads only the messages around at (history.ReadPoint), a
// few whatever id's length.
//
// A point inside a round — after an answer with tool calls, before their
// results — is refused with an error wrapping history.ErrInsideRound
// naming the points on either side, and nothing moves: the next turn
// would take it for a round a crash stopped and run its calls again or
// answer them as interrupted.
func Rewind(ctx context.Context, store history.Store, id string, at int, opt Options) (history.Conversation, Files, error) {
	b, err := brancherOf(store, "rewinding conversation "+id)
	if err != nil {
		return history.Conversation{}, Files{}, err
	}
	return held(ctx, store, id, func(ctx context.Context) (history.Conversation, Files, error) {
		var msgs []history.Message
		var err error
		if opt.Files != nil {
			// the files go back: the messages after at say which
			msgs, err = store.Messages(ctx, id)
			if err == nil {
				err = history.InsideRound(msgs, at)
			}
		} else if at >= 0 { // below 0: the store's Rewind says what is wrong
			// only the messages around the point (history.ReadPoint)
			var p history.Point
			if p, err = history.ReadPoint(ctx, store, id, at); err == nil {
				err = p.InsideRound()
			}
		}
		if errors.Is(err, history.ErrInsideRound) {
			return history.Conversation{}, Files{}, fmt.Errorf("rewinding conversation %s to %w", id, err)
		}
		if err != nil {
			return history.Conversation{}, Files{}, fmt.Errorf("rewinding conversation %s: %w", id, err)
		}
		return rewindTo(ctx, store, b, id, at, msgs, opt)
	})
}

// rewindTo is Rewind with id's messages read (msgs; only with opt.Files
// are they needed, and read).
func rewindTo(ctx context.Context, store history.Store, b history.Brancher, id string, at int, msgs []history.Message, opt Options) (history.Conversation, Files, error) {
	var todo *putBack
	if opt.Files != nil && at >= 0 && at < len(msgs) {
		// out of range, the store's Rewind says what is wrong
		back, err := recorded(ctx, store, id, []string{id}, msgs[:at], msgs[at:])
		if err != nil {
			return history.Conversation{}, Files{}, fmt.Errorf("rewinding conversation %s: %w", id, err)
		}
		todo = prepare(ctx, store, opt.Files, plan(back, nil))
	}
	br, err := b.Rewind(ctx, id, at)
	if err != nil {
		return history.Conversation{}, Files{}, err
	}
	return br, todo.apply(opt.Files, "the conversation was rewound"), nil
}

// Undo takes conversation id back to before its last prompt (the last
// user message that holds no tool results), which undoes its last turn;
// the branch returned keeps that turn (Redo brings it back). A
// conversation with no prompt is ErrNothingToUndo. opt is as Rewind's.
//
// An empty branch of id that parts where the rewind goes (one a Redo left)
// is switched to instead of making another, so that undoing and redoing
// does not pile up branches. Like Rewind, it reads and moves under id's
// claim: a turn that ends after its read cannot be taken back by it.
func Undo(ctx context.Context, store history.Store, id string, opt Options) (history.Conversation, Files, error) {
	b, err := brancherOf(store, "undoing the last turn of conversation "+id)
	if err != nil {
		return history.Conversation{}, Files{}, err
	}
	return held(ctx, store, id, func(ctx context.Context) (history.Conversation, Files, error) {
		msgs, err := store.Messages(ctx, id)
		if err != nil {
			return history.Conversation{}, Files{}, fmt.Errorf("undoing the last turn of conversation %s: %w", id, err)
		}
		at := lastPrompt(msgs)
		if at < 0 {
			return history.Conversation{}, Files{}, fmt.Errorf("undoing the last turn of conversation %s: %w", id, ErrNothingToUndo)
		}
		if empty, ok, err := emptyBranchAt(ctx, store, b, id, msgs, at); err != nil {
			return history.Conversation{}, Files{}, err
		} else if ok {
			files, err := switchWith(ctx, store, b, id, empty.ID, msgs, msgs[:at], opt, "the conversation was rewound")
			if err != nil {
				return history.Conversation{}, Files{}, err
			}
			br, err := store.Get(ctx, empty.ID)
			if err != nil {
				return history.Conversation{}, files, fmt.Errorf("undoing the last turn of conversation %s: reading its branch %s: %w", id, empty.ID, err)
			}
			return br, files, nil
		}
		return rewindTo(ctx, store, b, id, at, msgs, opt)
	})
}

// lastPrompt is the index of the last prompt in msgs (a user message
// with no tool results: where a turn begins, as agent reads it), -1 when
// there is none.
func lastPrompt(msgs []history.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == history.User && !m.HoldsResults() {
			return i
		}
	}
	return -1
}

// emptyBranchAt finds a branch of id holding exactly id's first at
// messages (msgs are id's), newest first.
func emptyBranchAt(ctx context.Context, store history.Store, b history.Brancher, id string, msgs []history.Message, at int) (history.Conversation, bool, error) {
	brs, err := b.Branches(ctx, id)
	if err != nil {
		return history.Conversation{}, false, fmt.Errorf("listing the branches of conversation %s: %w", id, err)
	}
	for i := len(brs) - 1; i >= 0; i-- {
		if brs[i].Messages != at {
			continue
		}
		bm, err := store.Messages(ctx, brs[i].ID)
		if err != nil {
			return history.Conversation{}, false, fmt.Errorf("reading branch %s of conversation %s: %w", brs[i].ID, id, err)
		}
		if Parting(msgs, bm) == at {
			return brs[i], true, nil
		}
	}
	return history.Conversation{}, false, nil
}

// Redo switches conversation id to its newest branch that goes on from
// id's end (what an Undo, or a Rewind to the end, took back) and returns
// the branch's id; with none, ErrNothingToRedo. opt is as Switch's: the
// files the tools changed in the turns it brings back are put forward.
// Like Rewind, it reads and moves under id's claim.
func Redo(ctx context.Context, store history.Store, id string, opt Options) (string, Files, error) {
	b, err := brancherOf(store, "redoing conversation "+id)
	if err != nil {
		return "", Files{}, err
	}
	return held(ctx, store, id, func(ctx context.Context) (string, Files, error) {
		msgs, err := store.Messages(ctx, id)
		if err != nil {
			return "", Files{}, fmt.Errorf("redoing conversation %s: %w", id, err)
		}
		brs, err := b.Branches(ctx, id)
		if err != nil {
			return "", Files{}, fmt.Errorf("redoing conversation %s: %w", id, err)
		}
		for i := len(brs) - 1; i >= 0; i-- {
			if brs[i].Messages <= len(msgs) {
				continue
			}
			bm, err := store.Messages(ctx, brs[i].ID)
			if err != nil {
				return "", Files{}, fmt.Errorf("redoing conversation %s: reading its branch %s: %w", id, brs[i].ID, err)
			}
			if Parting(msgs, bm) != len(msgs) {
				continue
			}
			files, err := switchWith(ctx, store, b, id, brs[i].ID, msgs, bm, opt, "the conversation was switched")
			return brs[i].ID, files, err
		}
		return "", Files{}, fmt.Errorf("redoing conversation %s: %w", id, ErrNothingToRedo)
	})
}

// Switch makes conversation id go on as its branch does, through the
// store's Brancher.Switch. With opt.Files, the files the tools changed in
// id's messages after the point where the two part go back to how they
// were at that point, and those changed in the branch's go to how the
// branch's tools left them: one check and one put-back per file, the
// checks made before the switch, as Rewind's are, under id's claim.
func Switch(ctx context.Context, store history.Store, id, branch string, opt Options) (Files, error) {
	b, err := brancherOf(store, "switching conversation "+id+" to "+branch)
	if err != nil {
		return Files{}, err
	}
	_, files, err := held(ctx, store, id, func(ctx context.Context) (struct{}, Files, error) {
		var msgs, bm []history.Message
		if opt.Files != nil {
			var err error
			if msgs, err = store.Messages(ctx, id); err != nil {
				return struct{}{}, Files{}, fmt.Errorf("switching conversation %s to %s: %w", id, branch, err)
			}
			if bm, err = store.Messages(ctx, branch); err != nil {
				return struct{}{}, Files{}, fmt.Errorf("switching conversation %s to %s: %w", id, branch, err)
			}
		}
		files, err := switchWith(ctx, store, b, id, branch, msgs, bm, opt, "the conversation was switched")
		return struct{}{}, files, err
	})
	return files, err
}

// switchWith is Switch with both conversations' messages read (nil
// without opt.Files); done says what was done for a put-back's error.
func switchWith(ctx context.Context, store history.Store, b history.Brancher, id, branch string, msgs, bm []history.Message, opt Options, done string) (Files, error) {
	var todo *putBack
	if opt.Files != nil {
		p := Parting(msgs, bm)
		back, err := recorded(ctx, store, id, []string{id, branch}, msgs[:p], msgs[p:])
		if err != nil {
			return Files{}, fmt.Errorf("switching conversation %s to %s: %w", id, branch, err)
		}
		forward, err := recorded(ctx, store, branch, []string{id, branch}, bm[:p], bm[p:])
		if err != nil {
			return Files{}, fmt.Errorf("switching conversation %s to %s: %w", id, branch, err)
		}
		todo = prepare(ctx, store, opt.Files, plan(back, forward))
	}
	if err := b.Switch(ctx, id, branch); err != nil {
		return Files{}, err
	}
	return todo.apply(opt.Files, done), nil
}

// Parting is how many first messages a and b have the same: where two
// conversations part, as far as their messages tell (a fork's, a
// branch's first messages are the same ones as their base's). Messages
// equal in all they hold count as the same, which is all a rewind needs:
// the files their tools changed are the same too.
func Parting(a, b []history.Message) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if !sameMessage(a[i], b[i]) {
			return i
		}
	}
	return n
}

// sameMessage reports whether a and b hold the same: role, time and
// parts first (cheap), then the rest as JSON.
func sameMessage(a, b history.Message) bool {
	if a.Role != b.Role || !a.Time.Equal(b.Time) || len(a.Parts) != len(b.Parts) {
		return false
	}
	a.Time, b.Time = time.Time{}, time.Time{} // equal, perhaps in two locations
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && string(ja) == string(jb)
}
