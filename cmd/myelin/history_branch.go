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
)

// This file is `history fork`, `history rewind`, `history branches` and
// `history switch`: forks and branches of a conversation
// (docs/branches.md), through the store's history.Brancher.

// brancher is store as a Brancher, or a usage line saying it keeps none.
func brancher(store history.Store, cmd string, stderr io.Writer) (history.Brancher, bool) {
	b, ok := store.(history.Brancher)
	if !ok {
		fmt.Fprintf(stderr, "myelin %s: this history store keeps no forks or branches\n", cmd)
	}
	return b, ok
}

// historyFork forks conversation id at its first at messages (at < 0:
// all) and prints the new conversation's id.
func historyFork(ctx context.Context, store history.Store, id string, at int, stdout, stderr io.Writer) int {
	if _, ok := brancher(store, "history fork", stderr); !ok {
		return exitError
	}
	fork, err := agent.Fork(ctx, store, id, at)
	if err != nil {
		return historyBranchError("history fork", id, err, stderr)
	}
	fmt.Fprintln(stdout, fork)
	return exitOK
}

// historyRewind takes conversation id back to its first at messages and
// says which branch keeps the rest.
func historyRewind(ctx context.Context, store history.Store, id string, at int, stdout, stderr io.Writer) int {
	b, ok := brancher(store, "history rewind", stderr)
	if !ok {
		return exitError
	}
	br, err := b.Rewind(ctx, id, at)
	if err != nil {
		return historyBranchError("history rewind", id, err, stderr)
	}
	fmt.Fprintf(stdout, "conversation %s goes on from message %d; what followed is kept as branch %s (`myelin history switch %s %s` brings it back)\n", id, at, br.ID, id, br.ID)
	fmt.Fprintln(stdout, "workspace files were not changed: a rewind takes back the conversation, not what its tools wrote")
	return exitOK
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
	for _, c := range list {
		fmt.Fprintf(stdout, "%s\t%s\tfrom message %d\t%d messages\n", c.ID, c.Created.Local().Format(time.DateTime), c.BaseAt, c.Messages)
	}
	return exitOK
}

// historySwitch makes conversation id go on as branch does.
func historySwitch(ctx context.Context, store history.Store, id, branch string, stdout, stderr io.Writer) int {
	b, ok := brancher(store, "history switch", stderr)
	if !ok {
		return exitError
	}
	if err := b.Switch(ctx, id, branch); err != nil {
		return historyBranchError("history switch", id, err, stderr)
	}
	fmt.Fprintf(stdout, "conversation %s goes on as branch %s did; what it held is now branch %s\n", id, branch, branch)
	return exitOK
}

// historyBranchError says err of cmd on conversation id.
func historyBranchError(cmd, id string, err error, stderr io.Writer) int {
	var held *history.HeldError
	switch {
	case errors.As(err, &held):
		fmt.Fprintf(stderr, "myelin %s: %v: a turn of it is running; nothing was changed\n", cmd, err)
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
