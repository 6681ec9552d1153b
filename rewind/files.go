package rewind

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/workspace"
)

// This file puts files back (docs/branches.md "Putting files back"): a
// plan per file from the changes the tools recorded (history.FileChange)
// in the messages taken back and in those brought back, checked against
// the workspace before the conversation moves, carried out after.

// state is a file's content as the records tell it: no file (absent),
// or the content whose hash is hash; neither when the content was too
// large to have been kept.
type state struct {
	absent bool
	hash   string
}

func (s state) known() bool { return s.absent || s.hash != "" }

// holds reports whether a file that exists with data (or does not) is
// in state s.
func (s state) holds(data []byte, exists bool) bool {
	if s.absent {
		return !exists
	}
	return exists && history.BlobHash(data) == s.hash
}

// step is what a rewind or a switch does to one file.
type step struct {
	path string
	// expect is what the file holds now when no one but the tools
	// changed it; target is what it is to hold
	expect, target state
}

// Reasons a file is left as it is.
const (
	whyTooLarge   = "its content to put back was over 16 MiB, too large to have been kept: it cannot be put back"
	whyUnchecked  = "the content the tools last wrote was over 16 MiB, too large to have been kept, so whether it was changed since cannot be checked"
	whyChanged    = "changed since by someone else: its content is not what the tools last wrote"
	whyRemoved    = "changed since by someone else: the tools last left it in place, and it is gone"
	whyAppeared   = "changed since by someone else: the tools last left no file there, and there is one"
	whyNoVersions = "the history store keeps no versions of files, so its content cannot be put back"
)

// plan is a step per file the tools changed in back (the changes of what
// a move takes back, oldest first: recorded) or in forward (those of what
// it brings back): each goes from what back's changes last left (or,
// when back has none, its state at the point) to what forward's last
// left (or its state at the point). The state at the point is what the
// first change of either replaced.
func plan(back, forward []history.FileChange) []step {
	bk, fw := byPath(back), byPath(forward)
	paths := make([]string, 0, len(bk)+len(fw))
	for p := range bk {
		paths = append(paths, p)
	}
	for p := range fw {
		if _, ok := bk[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	steps := make([]step, 0, len(paths))
	for _, p := range paths {
		u, r := bk[p], fw[p]
		first := r
		if len(u) > 0 {
			first = u
		}
		at := before(first[0])
		s := step{path: p, expect: at, target: at}
		if len(u) > 0 {
			s.expect = after(u[len(u)-1])
		}
		if len(r) > 0 {
			s.target = after(r[len(r)-1])
		}
		steps = append(steps, s)
	}
	return steps
}

// byPath are changes by path, each path's in order.
func byPath(changes []history.FileChange) map[string][]history.FileChange {
	out := map[string][]history.FileChange{}
	for _, c := range changes {
		out[c.Path] = append(out[c.Path], c)
	}
	return out
}

// recorded are the file changes of what a move takes from (or brings to)
// conversation conv, in order: those on the results in tail (conv's
// messages after the point; prior, those before it), then those on the
// results kept for conv's unfinished round (Store.Kept), which a store's
// Rewind and Switch move with the messages; and, at the place of each
// delegating call's result, those of the subagent the call started
// (recordedBy). parents are the conversations whose children (Parent)
// may have been started by calls in tail: conv, and for a switch its
// branch too.
func recorded(ctx context.Context, store history.Store, conv string, parents []string, prior, tail []history.Message) ([]history.FileChange, error) {
	var parts []history.Part
	for _, m := range tail {
		parts = append(parts, m.Parts...)
	}
	kept, err := store.Kept(ctx, conv)
	if err != nil {
		return nil, fmt.Errorf("reading the results kept for the unfinished round of conversation %s: %w", conv, err)
	}
	parts = append(parts, kept...)
	calls := map[string]int{} // the calls of each id in prior
	for _, m := range prior {
		for _, p := range m.Parts {
			if p.Type == history.ToolCallPart {
				calls[p.CallID]++
			}
		}
	}
	var kids []history.Conversation
	for _, id := range parents {
		if !slices.ContainsFunc(parts, func(p history.Part) bool { return p.Type == history.ToolCallPart }) {
			break
		}
		k, err := history.Children(ctx, store, id)
		if err != nil {
			return nil, fmt.Errorf("listing the subagents of conversation %s: %w", id, err)
		}
		kids = append(kids, k...)
	}
	history.SortChildren(kids)
	started := map[string][]history.Conversation{} // by ParentCall, oldest first
	for _, k := range kids {
		started[k.ParentCall] = append(started[k.ParentCall], k)
	}
	var out []history.FileChange
	pending := map[string][]history.Conversation{} // started by a call whose result is still to come
	var order []string                             // the ids of those calls, as made
	for _, p := range parts {
		switch p.Type {
		case history.ToolCallPart:
			// a provider may give the same call id twice (the fakes of
			// tests do): the n-th call of an id started its n-th child,
			// as delegate reads it
			if n := calls[p.CallID]; n < len(started[p.CallID]) {
				pending[p.CallID] = append(pending[p.CallID], started[p.CallID][n])
				order = append(order, p.CallID)
			}
			calls[p.CallID]++
		case history.ToolResultPart:
			if q := pending[p.CallID]; len(q) > 0 {
				pending[p.CallID] = q[1:]
				sub, err := recordedBy(ctx, store, q[0])
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
			}
		}
		out = append(out, p.Files...)
	}
	// a call with no result yet (its round unfinished, nothing kept):
	// its subagent's changes come last, in the order of the calls
	for _, id := range order {
		if q := pending[id]; len(q) > 0 {
			pending[id] = q[1:]
			sub, err := recordedBy(ctx, store, q[0])
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}

// recordedBy are the file changes subagent conversation c recorded: on
// the results of its own messages — after its first BaseAt, which a fork
// shares with its parent (they are the parent's, before the call) — and
// those kept for its unfinished round, with its own subagents', as
// recorded says.
func recordedBy(ctx context.Context, store history.Store, c history.Conversation) ([]history.FileChange, error) {
	msgs, err := store.Messages(ctx, c.ID)
	if err != nil {
		return nil, fmt.Errorf("reading the conversation %s of a subagent: %w", c.ID, err)
	}
	at := min(c.BaseAt, len(msgs))
	return recorded(ctx, store, c.ID, []string{c.ID}, msgs[:at], msgs[at:])
}

// before is the state change c found the file in; after, the one it left.
func before(c history.FileChange) state {
	if c.Created {
		return state{absent: true}
	}
	return state{hash: c.Before}
}

func after(c history.FileChange) state { return state{hash: c.After} }

// putBack is a checked plan: what is to be written or removed once the
// conversation has moved, and the files already decided.
type putBack struct {
	files Files
	acts  []act
}

// act is one file to put back: its content data, or removed.
type act struct {
	path   string
	expect state // checked again just before
	data   []byte
	remove bool
}

// prepare checks each step against the workspace ws and reads the
// content to put back from the store, before the conversation moves: a
// file not as the tools left it, or whose content is not kept, is
// skipped, and one already as it is to be needs nothing.
func prepare(ctx context.Context, store history.Store, ws Workspace, steps []step) *putBack {
	pb := &putBack{}
	blobs, _ := store.(history.Blobs)
	for _, s := range steps {
		skip := func(why string) { pb.files.Skipped = append(pb.files.Skipped, Skipped{Path: s.path, Why: why}) }
		switch {
		case !s.target.known():
			skip(whyTooLarge)
			continue
		case !s.expect.known():
			skip(whyUnchecked)
			continue
		}
		data, exists, err := ws.Current(s.path)
		switch {
		case errors.Is(err, workspace.ErrNowLinked):
			skip(err.Error()) // it says what is a link, to where, and that the file was left
			continue
		case err != nil:
			skip(fmt.Sprintf("reading it failed, so it was left as it is: %v", err))
			continue
		case !s.expect.holds(data, exists):
			skip(changedWhy(s.expect, exists))
			continue
		case s.target.holds(data, exists):
			pb.done(s.path, s.target.absent) // as it is to be already
			continue
		case s.target.absent:
			pb.acts = append(pb.acts, act{path: s.path, expect: s.expect, remove: true})
			continue
		case blobs == nil:
			skip(whyNoVersions)
			continue
		}
		content, err := blobs.BlobByHash(ctx, s.target.hash)
		switch {
		case err != nil:
			skip(fmt.Sprintf("its content to put back could not be read from the history store: %v", err))
		case history.BlobHash(content) != s.target.hash:
			skip("its content to put back, as the history store keeps it, does not match its hash: the store is damaged")
		default:
			pb.acts = append(pb.acts, act{path: s.path, expect: s.expect, data: content})
		}
	}
	return pb
}

// changedWhy says how a file in state expect was changed since, by
// whether it exists now.
func changedWhy(expect state, exists bool) string {
	switch {
	case expect.absent:
		return whyAppeared
	case !exists:
		return whyRemoved
	}
	return whyChanged
}

// done records path as put back: removed, or restored.
func (pb *putBack) done(path string, removed bool) {
	if removed {
		pb.files.Removed = append(pb.files.Removed, path)
	} else {
		pb.files.Restored = append(pb.files.Restored, path)
	}
}

// apply puts the files of pb back in ws, once what (the conversation's
// move) is done: each checked once more just before, and an error made a
// Skipped saying the conversation moved all the same. A nil pb did
// nothing.
func (pb *putBack) apply(ws Workspace, what string) Files {
	if pb == nil {
		return Files{}
	}
	for _, a := range pb.acts {
		skip := func(why string) { pb.files.Skipped = append(pb.files.Skipped, Skipped{Path: a.path, Why: why}) }
		data, exists, err := ws.Current(a.path)
		switch {
		case errors.Is(err, workspace.ErrNowLinked):
			skip(err.Error())
			continue
		case err != nil:
			skip(fmt.Sprintf("reading it failed, so it was left as it is (%s all the same): %v", what, err))
			continue
		case !a.expect.holds(data, exists):
			skip(changedWhy(a.expect, exists))
			continue
		}
		if err := ws.PutBack(a.path, a.data, a.remove); errors.Is(err, workspace.ErrNowLinked) {
			skip(err.Error())
			continue
		} else if err != nil {
			skip(fmt.Sprintf("putting it back failed (%s all the same): %v", what, err))
			continue
		}
		pb.done(a.path, a.remove)
	}
	slices.Sort(pb.files.Restored)
	slices.Sort(pb.files.Removed)
	slices.SortFunc(pb.files.Skipped, func(a, b Skipped) int { return cmp.Compare(a.Path, b.Path) })
	return pb.files
}
