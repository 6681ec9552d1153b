package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
)

// This file is the branch tree `history show` and `history list` print
// (docs/branches.md): what a conversation was forked from, what it is a
// branch of, its branches and its forks.

// forkOrigin is the conversation whose first messages conversation c
// continues, as a fork, and how many: c's Base, passing over c's own
// branches (a switch may leave a conversation reading its first messages
// from one of them, which makes it no fork). "" for a conversation that is
// no fork, or a branch.
func forkOrigin(ctx context.Context, store history.Store, c history.Conversation) (string, int) {
	if c.BranchOf != "" {
		return "", 0
	}
	own := map[string]bool{c.ID: true}
	at := c.BaseAt
	for cur := c; cur.Base != ""; {
		at = min(at, cur.BaseAt)
		base, err := store.Get(ctx, cur.Base)
		if err != nil {
			return cur.Base, at
		}
		if base.BranchOf == "" || !own[base.BranchOf] || own[base.ID] {
			return base.ID, at
		}
		own[base.ID] = true
		cur = base
	}
	return "", 0
}

// forkNote is "fork of conversation BASE at message N" for a fork (BASE
// named as a branch when it is one), "" for another conversation.
func forkNote(ctx context.Context, store history.Store, c history.Conversation) string {
	base, at := forkOrigin(ctx, store, c)
	if base == "" {
		return ""
	}
	note := fmt.Sprintf("fork of conversation %s at message %d", base, at)
	if b, err := store.Get(ctx, base); err == nil && b.BranchOf != "" {
		note += fmt.Sprintf(" (%s is a branch of %s)", base, b.BranchOf)
	}
	return note
}

// showTree prints the head of `history show` for conversation rec: what
// it is a fork or a branch of, its branches with where each parts from
// it, and the forks that read their first messages from it. A store without branches prints nothing.
func showTree(ctx context.Context, w io.Writer, store history.Store, rec history.Conversation) error {
	b, ok := store.(history.Brancher)
	if !ok {
		return nil
	}
	if note := forkNote(ctx, store, rec); note != "" {
		fmt.Fprintln(w, note)
	}
	if rec.BranchOf != "" {
		of, err := store.Get(ctx, rec.BranchOf)
		if err != nil {
			return err
		}
		at, err := rewind.PartsAt(ctx, store, of, rec)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "branch of conversation %s, parting from it after message %d (`myelin history switch %s %s` makes %s go on as this)\n",
			rec.BranchOf, at, rec.BranchOf, rec.ID, rec.BranchOf)
	}
	brs, err := b.Branches(ctx, rec.ID)
	if err != nil {
		return err
	}
	var line []string
	for _, br := range brs {
		at, err := rewind.PartsAt(ctx, store, rec, br)
		if err != nil {
			return err
		}
		line = append(line, fmt.Sprintf("%s (from message %d, %d messages)", br.ID, at, br.Messages))
	}
	if len(line) > 0 {
		fmt.Fprintf(w, "branches: %s\n", strings.Join(line, ", "))
	}
	all, err := store.List(ctx)
	if err != nil {
		return err
	}
	line = line[:0]
	for _, c := range all {
		if c.Base == rec.ID && c.BranchOf == "" && c.ID != rec.ID {
			line = append(line, fmt.Sprintf("%s (at message %d)", c.ID, c.BaseAt))
		}
	}
	if len(line) > 0 {
		fmt.Fprintf(w, "forks: %s\n", strings.Join(line, ", "))
	}
	return nil
}
