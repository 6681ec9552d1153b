package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/purge"
	"github.com/myelin-run/myelin/workspace"
)

// historyDelete deletes conversation id from store (named path), with the
// spill files of the workspace at wsDir its records alone name, and says
// what went (package purge).
func historyDelete(ctx context.Context, store history.Store, path, wsDir, id string, stdout, stderr io.Writer) int {
	ws, err := workspace.Open(wsDir)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history delete: %v\n", err)
		return exitError
	}
	defer ws.Close()
	d, err := purge.Conversation(ctx, store, ws, id)
	var held *history.HeldError
	switch {
	case errors.As(err, &held):
		fmt.Fprintf(stderr, "myelin history delete: %v: a turn of it is running; nothing was deleted. Delete it once the turn has ended (or stop that process)\n", err)
		return exitError
	case errors.Is(err, history.ErrNotFound):
		fmt.Fprintf(stderr, "myelin history delete: no such conversation %q in %s (`myelin history list` lists them)\n", id, path)
		return exitError
	case errors.Is(err, purge.ErrCannotDelete):
		fmt.Fprintf(stderr, "myelin history delete: %v\n", err)
		return exitError
	case err != nil:
		fmt.Fprintf(stderr, "myelin history delete: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "deleted conversation %s from %s: %s, %s, %s\n", id, path,
		plural(d.Messages, "message", "messages"), plural(d.Requests, "request sent", "requests sent"), plural(len(d.Files), "spill file", "spill files"))
	for _, p := range d.Files {
		fmt.Fprintf(stdout, "  removed %s\n", workspace.ResultName(p))
	}
	for _, p := range d.Shared {
		fmt.Fprintf(stdout, "  kept %s: a conversation of its family (a parent's, a subagent's) names it too\n", workspace.ResultName(p))
	}
	for _, p := range d.Missing {
		fmt.Fprintf(stdout, "  not in this workspace: %s\n", workspace.ResultName(p))
	}
	for _, why := range d.NotRemoved {
		fmt.Fprintf(stderr, "myelin history delete: not removed: %s\n", why)
	}
	if len(d.Children) > 0 {
		fmt.Fprintf(stdout, "  kept the conversations its subagents had (%s): delete them by their ids\n", strings.Join(d.Children, ", "))
	}
	if len(d.NotRemoved) > 0 {
		return exitError
	}
	return exitOK
}

// parseAge reads --older-than: a Go duration (90m, 36h) or a whole
// number of days (7d), above zero.
func parseAge(v string) (time.Duration, error) {
	const want = "give a duration such as 7d (days), 36h or 90m"
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100000 {
			return 0, fmt.Errorf("--older-than %q: %s", v, want)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("--older-than %q: %s", v, want)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("--older-than %q: it must be above zero: %s", v, want)
	}
	return d, nil
}

// historyPrune removes the spill files of the workspace at wsDir older
// than age (as given: ageText) that no conversation of store names, and says what it removed
// and what it kept.
func historyPrune(ctx context.Context, store history.Store, path, wsDir, ageText string, age time.Duration, dryRun bool, stdout, stderr io.Writer) int {
	ws, err := workspace.Open(wsDir)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history prune: %v\n", err)
		return exitError
	}
	defer ws.Close()
	p, err := purge.Prune(ctx, store, ws, time.Now().Add(-age), dryRun)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history prune: %v\n", err)
		return exitError
	}
	verb := "removed"
	if dryRun {
		verb = "would remove (a dry run: nothing was removed)"
	}
	dir := filepath.Join(ws.Dir(), filepath.FromSlash(workspace.ResultsDir))
	fmt.Fprintf(stdout, "%s %s (%d bytes) of %s: older than %s, named by no conversation in %s\n",
		verb, plural(len(p.Removed), "file", "files"), p.Bytes, dir, ageText, path)
	for _, f := range p.Removed {
		fmt.Fprintf(stdout, "  %s\t%d bytes\t%s\n", workspace.ResultName(f.Path), f.Size, f.Modified.Local().Format(time.DateTime))
	}
	fmt.Fprintf(stdout, "kept %s a conversation names, %s newer than %s", plural(p.Named, "file", "files"), plural(p.Young, "file", "files"), ageText)
	if len(p.Other) > 0 {
		fmt.Fprintf(stdout, ", and %d entries that are not regular files (links, directories: never removed)", len(p.Other))
	}
	fmt.Fprintln(stdout)
	for _, why := range p.NotRemoved {
		fmt.Fprintf(stderr, "myelin history prune: not removed: %s\n", why)
	}
	if len(p.NotRemoved) > 0 {
		return exitError
	}
	return exitOK
}
