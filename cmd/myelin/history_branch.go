package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
	"github.com/myelin-run/myelin/workspace"
)

// This file is `history fork`, `history rewind`, `history undo`,
// `history redo`, `history branches` and `history switch`: forks and
// branches of a conversation (docs/branches.md), through the store's
// history.Brancher and package rewind.

// brancher is store as a Brancher, or a usage line saying it keeps none.
func brancher(store history.Store, cmd string, stderr io.Writer) (history.Brancher, bool) {
	b, ok := store.(history.Brancher)
	if !ok {
		fmt.Fprintf(stderr, "myelin %s: this history store keeps no forks or branches\n", cmd)
	}
	return b, ok
}

// historyFork forks conversation id at its first at messages (at < 0:
// all, or those before the answer whose round is in flight, said on
// stderr) and prints the new conversation's id.
func historyFork(ctx context.Context, store history.Store, id string, at int, stdout, stderr io.Writer) int {
	if _, ok := brancher(store, "history fork", stderr); !ok {
		return exitError
	}
	fork, err := agent.Fork(ctx, store, id, at)
	if err != nil {
		return historyBranchError("history fork", id, err, stderr)
	}
	fmt.Fprintln(stdout, fork)
	if at < 0 {
		// the end, or before the answer whose round is in flight: say which
		if c, err := store.Get(ctx, fork); err == nil {
			fmt.Fprintf(stderr, "forked conversation %s at message %d\n", id, c.BaseAt)
		}
	}
	return exitOK
}

// historyRewind takes conversation h.pos[0] back to its first h.at
// messages and says which branch keeps the rest, and, with --files, what
// was done to the workspace files (rewind.Rewind).
func historyRewind(ctx context.Context, store history.Store, h historyCall, stdout, stderr io.Writer) int {
	return historyMove(store, h, stdout, stderr, func(id string, opt rewind.Options) (string, rewind.Files, error) {
		br, files, err := rewind.Rewind(ctx, store, id, h.at, opt)
		if err != nil {
			return "", files, err
		}
		return fmt.Sprintf("conversation %s goes on from message %d; what followed is kept as branch %s (`myelin history switch %s %s` brings it back)", id, h.at, br.ID, id, br.ID), files, nil
	})
}

// historyUndoRedo takes back conversation h.pos[0]'s last turn (undo) or
// brings back what the last undo took back (redo), and says what it did.
func historyUndoRedo(ctx context.Context, store history.Store, h historyCall, stdout, stderr io.Writer) int {
	undo := h.sub == "undo"
	return historyMove(store, h, stdout, stderr, func(id string, opt rewind.Options) (string, rewind.Files, error) {
		var branch string
		var files rewind.Files
		var err error
		if undo {
			var br history.Conversation
			br, files, err = rewind.Undo(ctx, store, id, opt)
			branch = br.ID
		} else {
			branch, files, err = rewind.Redo(ctx, store, id, opt)
		}
		if err != nil {
			return "", files, err
		}
		c, err := store.Get(ctx, id)
		if err != nil {
			return "", files, err
		}
		if undo {
			return fmt.Sprintf("conversation %s goes on from message %d, before its last turn; the turn is kept as branch %s (`myelin history redo %s` brings it back)", id, c.Messages, branch, id), files, nil
		}
		return fmt.Sprintf("conversation %s goes on as branch %s did, to message %d (`myelin history undo %s` takes back its last turn again)", id, branch, c.Messages, id), files, nil
	})
}

// historyMove runs move, a rewind, undo, redo or switch of conversation
// h.pos[0], once the store is known to keep branches and the options are
// ready (with --files, the workspace, closed when move returns): the
// start and end every move shares, as server's move is for the API. move
// says what it did in a line, printed with what it did to the files; its
// error is said as historyBranchError says it.
func historyMove(store history.Store, h historyCall, stdout, stderr io.Writer, move func(id string, opt rewind.Options) (said string, files rewind.Files, err error)) int {
	if _, ok := brancher(store, h.cmd, stderr); !ok {
		return exitError
	}
	var opt rewind.Options
	if h.files {
		ws, err := workspace.Open(h.wsDir)
		if err != nil {
			return usageError(stderr, h.cmd, fmt.Sprintf("--files puts files back in the workspace, and --workspace %q cannot be opened: %v", h.wsDir, err))
		}
		defer ws.Close()
		opt.Files = ws
	}
	id := h.pos[0]
	said, files, err := move(id, opt)
	if err != nil {
		return historyBranchError(h.cmd, id, err, stderr)
	}
	fmt.Fprintln(stdout, said)
	printFiles(stdout, h.files, files)
	return exitOK
}

// printFiles says what a rewind did to the workspace files: with
// --files (asked), which it restored, removed and left and why, and what
// it does not track; without, that it changed none.
func printFiles(w io.Writer, asked bool, f rewind.Files) {
	if !asked {
		fmt.Fprintln(w, "workspace files were not changed (--files puts back those the tools wrote or edited)")
		return
	}
	if len(f.Restored)+len(f.Removed)+len(f.Skipped) == 0 {
		fmt.Fprintln(w, "workspace files: the tools changed none in the messages taken back or brought back")
	}
	for _, p := range f.Restored {
		fmt.Fprintf(w, "  restored %s\n", p)
	}
	for _, p := range f.Removed {
		fmt.Fprintf(w, "  removed %s\n", p)
	}
	for _, s := range f.Skipped {
		fmt.Fprintf(w, "  left %s: %s\n", s.Path, s.Why)
	}
	fmt.Fprintln(w, rewind.NotTracked)
}

// historyBranches lists conversation id's branches, oldest first.
func historyBranches(ctx context.Context, store history.Store, id string, stdout, stderr io.Writer) int {
	b, ok := brancher(store, "history branches", stderr)
	if !ok {
		return exitError
	}
	list, err := b.Branches(ctx, id)
	if err != nil {
		return historyBranchError("history branches", id, err, stderr)
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "conversation %s has no branches\n", id)
		return exitOK
	}
	rec, err := store.Get(ctx, id)
	if err != nil {
		return historyBranchError("history branches", id, err, stderr)
	}
	for _, c := range list {
		at, err := rewind.PartsAt(ctx, store, rec, c)
		if err != nil {
			return historyBranchError("history branches", id, err, stderr)
		}
		fmt.Fprintf(stdout, "%s\t%s\tfrom message %d\t%d messages\n", c.ID, c.Created.Local().Format(time.DateTime), at, c.Messages)
	}
	return exitOK
}

// historySwitch makes conversation h.pos[0] go on as branch h.pos[1]
// does, with --files its workspace files too (rewind.Switch).
func historySwitch(ctx context.Context, store history.Store, h historyCall, stdout, stderr io.Writer) int {
	return historyMove(store, h, stdout, stderr, func(id string, opt rewind.Options) (string, rewind.Files, error) {
		branch := h.pos[1]
		files, err := rewind.Switch(ctx, store, id, branch, opt)
		if err != nil {
			return "", files, err
		}
		return fmt.Sprintf("conversation %s goes on as branch %s did; what it held is now branch %s", id, branch, branch), files, nil
	})
}

// historyBranchError says err of cmd on conversation id.
func historyBranchError(cmd, id string, err error, stderr io.Writer) int {
	var held *history.HeldError
	switch {
	case errors.As(err, &held) && held.Conversation != id:
		fmt.Fprintf(stderr, "myelin %s: %v: %s is a branch of %s that its own writer is advancing as a conversation of its own; nothing was changed: try again once that writer is done\n", cmd, err, held.Conversation, id)
	case errors.As(err, &held):
		fmt.Fprintf(stderr, "myelin %s: %v; nothing was changed: try again once that writer (a turn of it, or another move) is done\n", cmd, err)
	case errors.Is(err, history.ErrNotFound):
		fmt.Fprintf(stderr, "myelin %s: %v (`myelin history list` lists the conversations)\n", cmd, err)
	default:
		fmt.Fprintf(stderr, "myelin %s: %v\n", cmd, err)
	}
	return exitError
}

// parseAt reads --at: a count of messages, 0 or more.
func parseAt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--at %q: give a count of messages, 0 or more", s)
	}
	return n, nil
}
