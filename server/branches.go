package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
)

// This file is the API of forks and branches (issue 30, docs/branches.md):
// fork, rewind, undo, redo, switch and the branches of a conversation.
// A fork writes nothing of its base and needs no claim; the others write
// the conversation, and are refused (409) while a turn of it runs or is
// queued, and hold its claim while they write (hold).

// ForkInput is the body of POST /v1/conversations/{id}/fork.
type ForkInput struct {
	// At is how many of the conversation's first messages the fork
	// continues from (0 to its count, not inside a round); absent, all of
	// them, or those before the answer whose round is in flight (the
	// fork's base_at says which).
	At *int `json:"at,omitempty"`
}

// RewindInput is the body of POST /v1/conversations/{id}/rewind.
type RewindInput struct {
	// At is how many of its first messages the conversation keeps (0 to
	// its count less one); the rest go to a new branch.
	At *int `json:"at"`
	// Files, when set, puts back the workspace files the tools wrote or
	// edited after that point (FilesReport); on a server with no
	// workspace it is refused (501).
	Files bool `json:"files,omitempty"`
}

// FilesInput is the body of POST .../undo and .../redo: whether the
// workspace files go back (or forward) with the conversation.
type FilesInput struct {
	// Files, when set, puts back (undo) or forward (redo) the workspace
	// files the tools wrote or edited in the turn moved (FilesReport); on
	// a server with no workspace it is refused (501).
	Files bool `json:"files,omitempty"`
}

// SwitchInput is the body of POST /v1/conversations/{id}/switch.
type SwitchInput struct {
	// Branch is the id of one of the conversation's branches.
	Branch string `json:"branch"`
	// Files, when set, puts the workspace files the tools changed after
	// the point where the two part as the branch's tools left them
	// (FilesReport); on a server with no workspace it is refused (501).
	Files bool `json:"files,omitempty"`
}

// FilesReport is what a rewind, undo, redo or switch asked to move the
// files did to the workspace (rewind.Files): the files put back, those
// removed (created after the point), those left as they are and why, and
// what is never put back (rewind.NotTracked).
type FilesReport struct {
	Restored   []string      `json:"restored"`
	Removed    []string      `json:"removed"`
	Skipped    []SkippedFile `json:"skipped"`
	NotTracked string        `json:"not_tracked"`
}

// SkippedFile is a file a rewind left as it is, and why.
type SkippedFile struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Branch is a branch of a conversation as the API lists it: its record,
// and At, how many first messages it shares with the conversation (the
// point where they part: what a switch to it keeps).
type Branch struct {
	ConversationInfo
	At int `json:"at"`
}

// BranchRef is a branch as a conversation's record names it
// (ConversationInfo.Branches).
type BranchRef struct {
	ID       string `json:"id"`
	At       int    `json:"at"`
	Messages int    `json:"messages"`
}

// Rewound is the answer to a rewind or an undo: the conversation as it
// is now, the branch that keeps what came after the point, and, when the
// files were asked for, what was done to them.
type Rewound struct {
	Conversation ConversationInfo `json:"conversation"`
	Branch       Branch           `json:"branch"`
	Files        *FilesReport     `json:"files,omitempty"`
}

// Switched is the answer to a switch or a redo: the conversation as it
// is now, the branch switched to (which now holds what the conversation
// held after the point where they part: a second switch to it switches
// back), and, when the files were asked for, what was done to them.
type Switched struct {
	Conversation ConversationInfo `json:"conversation"`
	Branch       Branch           `json:"branch"`
	Files        *FilesReport     `json:"files,omitempty"`
}

// The events of a conversation whose history changed under its watchers:
// what they read of it before may be gone from it (kept on a branch).
const (
	EventRewound  = "conversation.rewound"  // rewoundEvent: a rewind or an undo
	EventSwitched = "conversation.switched" // switchedEvent: a switch or a redo
)

type rewoundEvent struct {
	// By is "rewind" or "undo".
	By string `json:"by"`
	// At is how many messages the conversation kept; Branch holds the rest.
	At     int          `json:"at"`
	Branch string       `json:"branch"`
	Files  *FilesReport `json:"files,omitempty"`
}

type switchedEvent struct {
	// By is "switch" or "redo".
	By string `json:"by"`
	// At is where the conversation and Branch part; Messages is how many
	// the conversation holds now.
	At       int          `json:"at"`
	Branch   string       `json:"branch"`
	Messages int          `json:"messages"`
	Files    *FilesReport `json:"files,omitempty"`
}

// fork serves POST /v1/conversations/{id}/fork: a new conversation that
// continues id's first at messages, shared, not copied (agent.Fork). It
// needs no claim on id: a fork may be made while id's turn runs. Without
// at it forks at the end, or, while a round is in flight, before the
// answer whose calls run: the fork's base_at says which.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in ForkInput
	if err := readJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	base, ok := s.found(w, r, id)
	if !ok {
		return
	}
	if !s.brancher(w) {
		return
	}
	at := -1 // the end, or before the answer whose round is in flight
	if in.At != nil {
		at = *in.At
		if at < 0 || at > base.Messages {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("at is %d: conversation %s holds %d messages, so a fork continues from 0 to %d of them (leave at out for all)", at, id, base.Messages, base.Messages))
			return
		}
	}
	fid, err := agent.Fork(r.Context(), s.Agent.Store, id, at)
	if err != nil {
		s.branchError(w, id, err)
		return
	}
	c, err := s.Agent.Store.Get(r.Context(), fid)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("reading fork %s of conversation %s: %v", fid, id, err))
		return
	}
	w.Header().Set("Location", "/v1/conversations/"+fid)
	writeJSON(w, http.StatusCreated, s.info(c))
}

// rewindConversation serves POST /v1/conversations/{id}/rewind.
func (s *Server) rewindConversation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in RewindInput
	if err := readJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.At == nil {
		writeError(w, http.StatusBadRequest, `a rewind needs its point: {"at": N} keeps the conversation's first N messages (POST .../undo takes back its last turn)`)
		return
	}
	c, ok := s.found(w, r, id)
	if !ok || !s.brancher(w) {
		return
	}
	if at := *in.At; at < 0 || at >= c.Messages {
		msg := fmt.Sprintf("at is %d: conversation %s holds %d messages, so a rewind keeps 0 to %d of them", at, id, c.Messages, c.Messages-1)
		if c.Messages == 0 {
			msg = fmt.Sprintf("conversation %s holds no messages: there is nothing to rewind", id)
		}
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	s.move(w, r, id, in.Files, "rewound", func(ctx context.Context) {
		br, files, err := rewind.Rewind(ctx, s.Agent.Store, id, *in.At, s.rewindOptions(in.Files))
		if err != nil {
			s.branchError(w, id, err)
			return
		}
		s.rewound(w, r, id, "rewind", br, files, in.Files)
	})
}

// undo serves POST /v1/conversations/{id}/undo: a rewind to before its
// last prompt (rewind.Undo).
func (s *Server) undo(w http.ResponseWriter, r *http.Request) { s.turnMove(w, r, "undo") }

// redo serves POST /v1/conversations/{id}/redo: a switch back to the
// newest branch that parts at its end (rewind.Redo).
func (s *Server) redo(w http.ResponseWriter, r *http.Request) { s.turnMove(w, r, "redo") }

// turnMove is undo or redo (by), whose body says only whether the files
// go too.
func (s *Server) turnMove(w http.ResponseWriter, r *http.Request, by string) {
	id := r.PathValue("id")
	var in FilesInput
	if err := readJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := s.found(w, r, id); !ok || !s.brancher(w) {
		return
	}
	verb := map[string]string{"undo": "undone", "redo": "redone"}[by]
	s.move(w, r, id, in.Files, verb, func(ctx context.Context) {
		if by == "undo" {
			br, files, err := rewind.Undo(ctx, s.Agent.Store, id, s.rewindOptions(in.Files))
			if err != nil {
				s.branchError(w, id, err)
				return
			}
			s.rewound(w, r, id, by, br, files, in.Files)
			return
		}
		branch, files, err := rewind.Redo(ctx, s.Agent.Store, id, s.rewindOptions(in.Files))
		if err != nil {
			s.branchError(w, id, err)
			return
		}
		s.switched(w, r, id, by, branch, files, in.Files)
	})
}

// move runs do, a move of conversation id, under the conversation's hold
// (hold, released when do returns), once the files asked for can be put
// back (filesOK): the end every move shares. When it cannot, it answers
// the request itself and do does not run.
func (s *Server) move(w http.ResponseWriter, r *http.Request, id string, files bool, verb string, do func(ctx context.Context)) {
	if !s.filesOK(w, files) {
		return
	}
	ctx, release, ok := s.hold(w, r, id, verb)
	if !ok {
		return
	}
	defer release()
	do(ctx)
}

// switchBranch serves POST /v1/conversations/{id}/switch.
func (s *Server) switchBranch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in SwitchInput
	if err := readJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.Branch == "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`a switch needs the branch to go on as: {"branch": "ID"} (GET /v1/conversations/%s/branches lists them)`, id))
		return
	}
	if _, ok := s.found(w, r, id); !ok || !s.brancher(w) {
		return
	}
	b, err := s.Agent.Store.Get(r.Context(), in.Branch)
	switch {
	case errors.Is(err, history.ErrNotFound):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("branch %q is not in the store: GET /v1/conversations/%s/branches lists the branches of conversation %s", in.Branch, id, id))
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("reading branch %s: %v", in.Branch, err))
		return
	case b.BranchOf != id:
		// said before taking the claim: the store says it again under it
		writeError(w, http.StatusBadRequest, notBranch(id, b))
		return
	}
	s.move(w, r, id, in.Files, "switched", func(ctx context.Context) {
		files, err := rewind.Switch(ctx, s.Agent.Store, id, in.Branch, s.rewindOptions(in.Files))
		if err != nil {
			s.branchError(w, id, err)
			return
		}
		s.switched(w, r, id, "switch", in.Branch, files, in.Files)
	})
}

// branches serves GET /v1/conversations/{id}/branches: its branches,
// oldest first, each with the point where it parts from it.
func (s *Server) branches(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c, ok := s.found(w, r, id)
	if !ok || !s.brancher(w) {
		return
	}
	list, err := s.Agent.Store.(history.Brancher).Branches(r.Context(), id)
	if err != nil {
		s.branchError(w, id, err)
		return
	}
	out := make([]Branch, 0, len(list))
	for _, b := range list {
		at, err := rewind.PartsAt(r.Context(), s.Agent.Store, c, b)
		if err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("where branch %s parts from conversation %s: %v", b.ID, id, err))
			return
		}
		out = append(out, Branch{ConversationInfo: s.info(b), At: at})
	}
	writeJSON(w, http.StatusOK, struct {
		Branches []Branch `json:"branches"`
	}{out})
}

// branchRefs are conversation c's branches as its record names them
// (GET /v1/conversations/{id}); none, or a store that keeps none, is nil.
func (s *Server) branchRefs(ctx context.Context, c history.Conversation) ([]BranchRef, error) {
	b, ok := s.Agent.Store.(history.Brancher)
	if !ok {
		return nil, nil
	}
	list, err := b.Branches(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	var out []BranchRef
	for _, br := range list {
		at, err := rewind.PartsAt(ctx, s.Agent.Store, c, br)
		if err != nil {
			return nil, err
		}
		out = append(out, BranchRef{ID: br.ID, At: at, Messages: br.Messages})
	}
	return out, nil
}

// hold takes conversation id for a write that is not a turn (a rewind,
// undo, redo or switch: done names it): it answers 409 and reports false
// while a turn of it runs here, is queued (Queue), background work of it
// runs or waits (idle), or another writer holds its claim; else it takes
// the claim through rewind.Hold, which renews it while held, so that no
// turn starts while the write is made (one that tries is refused with
// 409), and returns the context to write under and the release of the
// claim.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, id, done string) (context.Context, func(), bool) {
	if !s.idle(w, r, id, done) {
		return nil, nil, false
	}
	ctx, release, err := rewind.Hold(r.Context(), s.Agent.Store, id)
	var held *history.HeldError
	switch {
	case errors.As(err, &held):
		var e Held
		e.Error.Status = http.StatusConflict
		e.Error.Message = fmt.Sprintf("%v; nothing was %s: try again once that writer is done", err, done)
		e.Error.Holder = &held.Holder
		writeJSON(w, http.StatusConflict, e)
		return nil, nil, false
	case errors.Is(err, history.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no conversation %q", id))
		return nil, nil, false
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return nil, nil, false
	}
	// a turn started between the look and the claim has not claimed yet:
	// it would, once this write is done, and go on from a point its
	// client did not see
	if !s.idle(w, r, id, done) {
		release()
		return nil, nil, false
	}
	return ctx, release, true
}

// idle answers 409 and reports false when a turn of conversation id runs
// on this server or is queued or running on a worker (Queue), or when
// background work of it runs or waits (a background script running, a
// wake waiting for its turn): that work would go on about calls the move
// takes out of the history, and its wake start a turn about them. It is
// refused, not cancelled: the user decides what to stop (docs/serve.md).
func (s *Server) idle(w http.ResponseWriter, r *http.Request, id, done string) bool {
	if busy := s.backgroundWork(id); busy != "" {
		writeError(w, http.StatusConflict, fmt.Sprintf("conversation %s has background work running or waiting (%s); nothing was %s: stop it (a turn can call %s) or wait for it to end and its wakes' turns to finish, then try again", id, busy, done, background.ToolCancel))
		return false
	}
	tid := s.runningTurn(id)
	if tid == "" && s.Queue != nil {
		var err error
		if tid, err = s.Queue.Pending(r.Context(), id); err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("reading the turns queued for conversation %s: %v", id, err))
			return false
		}
	}
	if tid == "" {
		return true
	}
	var h Held
	h.Error.Status = http.StatusConflict
	h.Error.Message = fmt.Sprintf("conversation %s has turn %s running or queued; nothing was %s: cancel the turn or wait for its turn.finished event, then try again", id, tid, done)
	h.Error.Turn = tid
	writeJSON(w, http.StatusConflict, h)
	return false
}

// brancher answers 501 and reports false when the store keeps no forks or
// branches.
func (s *Server) brancher(w http.ResponseWriter) bool {
	if _, ok := s.Agent.Store.(history.Brancher); ok {
		return true
	}
	writeError(w, http.StatusNotImplemented, "this server's history store keeps no forks or branches (history.Brancher): use the SQLite, Postgres or in-memory store")
	return false
}

// rewindOptions are the options of a rewind: the server's workspace when
// the files are to move with the conversation (filesOK has said there is
// one).
func (s *Server) rewindOptions(files bool) rewind.Options {
	if !files || s.Workspace == nil {
		return rewind.Options{}
	}
	return rewind.Options{Files: s.Workspace}
}

// filesOK answers 501 and reports false when the files were asked to
// move (files) and the server has no workspace to put them back in:
// an empty report would read as if none needed it.
func (s *Server) filesOK(w http.ResponseWriter, files bool) bool {
	if !files || s.Workspace != nil {
		return true
	}
	writeError(w, http.StatusNotImplemented, `this server has no workspace, so it cannot put files back: leave "files" out (the conversation alone moves) or serve with a workspace`)
	return false
}

// rewound answers a rewind or undo (by) of conversation id, which made
// branch br, and tells its watchers.
func (s *Server) rewound(w http.ResponseWriter, r *http.Request, id, by string, br history.Conversation, files rewind.Files, withFiles bool) {
	ctx := context.WithoutCancel(r.Context()) // done: answered whatever the client does
	c, err := s.Agent.Store.Get(ctx, id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("conversation %s was rewound to branch %s, but reading it back failed: %v", id, br.ID, err))
		return
	}
	report := filesReport(files, withFiles)
	s.emit(id, EventRewound, rewoundEvent{By: by, At: c.Messages, Branch: br.ID, Files: report})
	writeJSON(w, http.StatusOK, Rewound{Conversation: s.info(c), Branch: Branch{ConversationInfo: s.info(br), At: c.Messages}, Files: report})
}

// switched answers a switch or redo (by) of conversation id to branch,
// and tells its watchers.
func (s *Server) switched(w http.ResponseWriter, r *http.Request, id, by, branch string, files rewind.Files, withFiles bool) {
	ctx := context.WithoutCancel(r.Context())
	c, err := s.Agent.Store.Get(ctx, id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("conversation %s was switched to branch %s, but reading it back failed: %v", id, branch, err))
		return
	}
	b, err := s.Agent.Store.Get(ctx, branch)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("conversation %s was switched to branch %s, but reading the branch back failed: %v", id, branch, err))
		return
	}
	at, err := rewind.PartsAt(ctx, s.Agent.Store, c, b)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("conversation %s was switched to branch %s, but where they part could not be read: %v", id, branch, err))
		return
	}
	report := filesReport(files, withFiles)
	s.emit(id, EventSwitched, switchedEvent{By: by, At: at, Branch: branch, Messages: c.Messages, Files: report})
	writeJSON(w, http.StatusOK, Switched{Conversation: s.info(c), Branch: Branch{ConversationInfo: s.info(b), At: at}, Files: report})
}

// filesReport is files as the API reports them; nil when they were not
// asked to move.
func filesReport(f rewind.Files, asked bool) *FilesReport {
	if !asked {
		return nil
	}
	out := &FilesReport{Restored: f.Restored, Removed: f.Removed, Skipped: []SkippedFile{}, NotTracked: rewind.NotTracked}
	if out.Restored == nil {
		out.Restored = []string{}
	}
	if out.Removed == nil {
		out.Removed = []string{}
	}
	for _, sk := range f.Skipped {
		out.Skipped = append(out.Skipped, SkippedFile{Path: sk.Path, Why: sk.Why})
	}
	return out
}

// branchError answers an error of a fork, a rewind or a switch of
// conversation id: 409 for
// another writer's claim (or nothing to undo or redo), 404 for a
// conversation not in the store, 400 for a branch that is not the
// conversation's or a point inside a round, 501 for a store that keeps no forks, else 500.
func (s *Server) branchError(w http.ResponseWriter, id string, err error) {
	var held *history.HeldError
	switch {
	case errors.As(err, &held):
		var h Held
		h.Error.Status = http.StatusConflict
		h.Error.Message = err.Error() + "; nothing was changed: " + heldAdvice(id, held)
		h.Error.Holder = &held.Holder
		writeJSON(w, http.StatusConflict, h)
	case errors.Is(err, history.ErrClaimLost):
		writeError(w, http.StatusConflict, err.Error()+"; nothing was changed: another writer took the conversation meanwhile")
	case errors.Is(err, rewind.ErrNothingToUndo), errors.Is(err, rewind.ErrNothingToRedo):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, history.ErrNotBranch), errors.Is(err, history.ErrInsideRound):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, history.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, agent.ErrNoForks), errors.Is(err, rewind.ErrNoBranches):
		writeError(w, http.StatusNotImplemented, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// notBranch says why conversation b is not a branch of conversation id.
func notBranch(id string, b history.Conversation) string {
	if b.BranchOf == "" {
		return fmt.Sprintf("%s is not a branch of conversation %s: it is a conversation of its own (GET /v1/conversations/%s/branches lists the branches)", b.ID, id, id)
	}
	return fmt.Sprintf("%s is not a branch of conversation %s: it is a branch of %s (GET /v1/conversations/%s/branches lists the branches)", b.ID, id, b.BranchOf, id)
}

// heldAdvice says what to do about held, refusing a move of conversation
// id, by what it names: id itself (a turn, or another move, holds it), or
// one of its branches, which someone goes on with as a conversation of
// its own.
func heldAdvice(id string, held *history.HeldError) string {
	if held.Conversation != id {
		return fmt.Sprintf("%s is a branch of %s that its own writer is advancing as a conversation of its own: switch to it once that writer is done", held.Conversation, id)
	}
	return "try again once that writer (a turn of it, or another move) is done"
}

// backgroundWork names the background work of conversation id on this
// server — its scripts running, its wakes waiting for their turns — or
// is "" when there is none.
func (s *Server) backgroundWork(id string) string {
	var parts []string
	if s.Background != nil {
		for _, b := range s.Background.List(id) {
			if b.Status == "running" {
				parts = append(parts, "background script "+b.ID+" running")
			}
		}
	}
	s.mu.Lock()
	c := s.convs[id]
	s.mu.Unlock()
	if c != nil {
		c.mu.Lock()
		n := len(c.wakes)
		c.mu.Unlock()
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d wake(s) waiting for their turn", n))
		}
	}
	return strings.Join(parts, ", ")
}
