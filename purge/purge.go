// Package purge removes what myelin keeps of conversations an operator no
// longer wants: a conversation whole — its stored records (through the
// store's history.Deleter) and the workspace files its records name — and
// the spill files under .myelin/tool-results/ that no stored conversation
// names any more. `myelin history delete`, `myelin history prune` and the
// API's DELETE /v1/conversations/{id} all go through it, so they remove
// the same things.
//
// It must not decide what the store deletes (history.Deleter's contract
// does), nor remove anything in the workspace but regular files directly
// under .myelin/tool-results/, through package workspace's checks (no
// symbolic link followed or removed), nor remove a file that a
// conversation of the deleted one's family (Conversation) names, or, when
// pruning, that any stored conversation names.
package purge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/workspace"
)

// Named returns the files under .myelin/tool-results/ that msgs and kept
// (a conversation's stored records and its kept results) name, each once,
// sorted: a result's spill path, a cleared result's file, and every path
// of that directory written in a text — a saved payload's, a placeholder's,
// one the model wrote in a call.
func Named(msgs []history.Message, kept []history.Part) []string {
	seen := map[string]bool{}
	add := func(raw []byte) {
		for _, p := range workspace.ResultPaths(string(raw)) {
			seen[p] = true
		}
	}
	for _, m := range msgs {
		raw, err := result.JSON(m) // every string of it, as stored: paths need no escaping
		if err != nil {
			continue // never for a message the store decoded
		}
		add(raw)
	}
	for _, p := range kept {
		if raw, err := result.JSON(p); err == nil {
			add(raw)
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// namedBy returns the files the conversations ids name.
func namedBy(ctx context.Context, store history.Store, ids []string) (map[string]bool, error) {
	named := map[string]bool{}
	for _, id := range ids {
		files, err := filesOf(ctx, store, id)
		if errors.Is(err, history.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		for _, p := range files {
			named[p] = true
		}
	}
	return named, nil
}

// everyone is the ids of every conversation in store.
func everyone(ctx context.Context, store history.Store) ([]string, error) {
	all, err := store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the conversations, to know the files they name: %w", err)
	}
	ids := make([]string, len(all))
	for i, c := range all {
		ids[i] = c.ID
	}
	return ids, nil
}

// family is the ids of the conversations of id's family but id: the
// tree of subagents' conversations it belongs to (Conversation.Parent),
// from the first conversation up its parents to the last one down their
// children, and the conversations whose messages id shares (its Base, and
// theirs: a fork's first messages, and the files they name, are its
// base's). A parent that is gone ends the way up.
func family(ctx context.Context, store history.Store, id string) ([]string, error) {
	tree, err := subagentTree(ctx, store, id)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{id: true}
	for _, k := range tree {
		seen[k] = true
	}
	for cur := id; ; {
		c, err := store.Get(ctx, cur)
		if errors.Is(err, history.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		if c.Base == "" || seen[c.Base] {
			break
		}
		seen[c.Base] = true
		tree = append(tree, c.Base)
		cur = c.Base
	}
	return tree, nil
}

// subagentTree is the ids of the conversations of id's tree of
// subagents' conversations but id (see family).
func subagentTree(ctx context.Context, store history.Store, id string) ([]string, error) {
	root := id
	for seen := map[string]bool{id: true}; ; {
		c, err := store.Get(ctx, root)
		if errors.Is(err, history.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		if c.Parent == "" || seen[c.Parent] {
			break
		}
		if _, err := store.Get(ctx, c.Parent); errors.Is(err, history.ErrNotFound) {
			break
		}
		seen[c.Parent] = true
		root = c.Parent
	}
	var out []string
	seen := map[string]bool{root: true}
	for queue := []string{root}; len(queue) > 0; {
		cur := queue[0]
		queue = queue[1:]
		if cur != id {
			out = append(out, cur)
		}
		kids, err := history.Children(ctx, store, cur)
		if err != nil {
			return nil, fmt.Errorf("the conversations started by %s: %w", cur, err)
		}
		for _, k := range kids {
			if !seen[k.ID] {
				seen[k.ID] = true
				queue = append(queue, k.ID)
			}
		}
	}
	return out, nil
}

// filesOf is Named of conversation id's records and kept results.
func filesOf(ctx context.Context, store history.Store, id string) ([]string, error) {
	msgs, err := store.Messages(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading conversation %s, to know the files it names: %w", id, err)
	}
	kept, err := store.Kept(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading the kept results of conversation %s: %w", id, err)
	}
	return Named(msgs, kept), nil
}

// Deleted says what Conversation deleted.
type Deleted struct {
	Conversation string `json:"conversation"`
	// Messages and Requests are how many stored records and requests sent
	// went with it.
	Messages int `json:"messages"`
	Requests int `json:"requests"`
	// Files are the workspace files removed; Shared those its records
	// name that a conversation of its family names too (a parent's, a
	// subagent's), left in place;
	// Missing those named but not in this workspace (removed before, or
	// written on another host sharing the store).
	Files   []string `json:"files"`
	Shared  []string `json:"shared_files,omitempty"`
	Missing []string `json:"missing_files,omitempty"`
	// NotRemoved are the files that could not be removed, each with why;
	// the conversation is deleted all the same.
	NotRemoved []string `json:"not_removed,omitempty"`
	// Children are the conversations its tool calls started: they are
	// not deleted, and name a parent that is gone.
	Children []string `json:"children,omitempty"`
}

// ErrCannotDelete is wrapped by the error for a store that deletes no
// conversation (it does not implement history.Deleter).
var ErrCannotDelete = errors.New("this store cannot delete conversations")

// Conversation deletes conversation id from store and then, when ws is
// not nil, removes from ws the files under .myelin/tool-results/ its
// records name and no other conversation of its family does: the tree of
// subagents' conversations it belongs to, where a file's path passes from
// a subagent's results to its parent's. Only the family is read, not the
// whole store (a server deleting one of many conversations must not read
// them all); Prune is what judges by every conversation. The store's error
// is returned as it is — a *history.HeldError while a live writer holds
// the conversation, one wrapping history.ErrNotFound for none — and then
// nothing is deleted. A file that cannot be removed is reported in
// NotRemoved, not as an error.
func Conversation(ctx context.Context, store history.Store, ws *workspace.Workspace, id string) (Deleted, error) {
	out := Deleted{Conversation: id, Files: []string{}}
	del, ok := store.(history.Deleter)
	if !ok {
		return out, fmt.Errorf("deleting conversation %s: %w (%T)", id, ErrCannotDelete, store)
	}
	c, err := store.Get(ctx, id)
	if err != nil {
		return out, err
	}
	out.Messages = c.Messages
	if r, ok := store.(history.Requests); ok {
		if out.Requests, err = r.RequestCount(ctx, id); err != nil {
			return out, err
		}
	}
	kids, err := history.Children(ctx, store, id)
	if err != nil {
		return out, err
	}
	for _, k := range kids {
		out.Children = append(out.Children, k.ID)
	}
	var files []string
	if ws != nil {
		if files, err = filesOf(ctx, store, id); err != nil {
			return out, err
		}
	}
	var others map[string]bool
	if len(files) > 0 {
		kin, err := family(ctx, store, id)
		if err != nil {
			return out, err
		}
		if others, err = namedBy(ctx, store, kin); err != nil {
			return out, err
		}
	}
	if err := del.Delete(ctx, id); err != nil {
		return out, err
	}
	for _, p := range files {
		if others[p] {
			out.Shared = append(out.Shared, p)
			continue
		}
		err := ws.RemoveResult(p)
		switch {
		case err == nil:
			out.Files = append(out.Files, p)
		case errors.Is(err, fs.ErrNotExist):
			out.Missing = append(out.Missing, p)
		default:
			out.NotRemoved = append(out.NotRemoved, fmt.Sprintf("%s: %v", p, err))
		}
	}
	return out, nil
}

// Pruned says what Prune removed and what it kept.
type Pruned struct {
	// Removed are the files removed (or, in a dry run, that would be),
	// with their sizes; Bytes is their sum.
	Removed []File `json:"removed"`
	Bytes   int64  `json:"bytes"`
	// Named is how many files were kept because a stored conversation
	// names them; Young how many because they are newer than the age
	// given; Other are the entries that are not regular files (links,
	// directories), never removed.
	Named int      `json:"named"`
	Young int      `json:"young"`
	Other []string `json:"other,omitempty"`
	// NotRemoved are the files that could not be removed, each with why.
	NotRemoved []string `json:"not_removed,omitempty"`
}

// File is a file Prune removed.
type File struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// Prune removes the regular files directly under ws's
// .myelin/tool-results/ last modified before cutoff that no conversation
// in store names (Named, over every conversation's records and kept
// results). With dryRun it removes nothing and reports what it would.
// Only the conversations of store are asked: files named by another
// store's conversations alone are not known to be named. A file written
// after cutoff is never removed, so a turn running now keeps the files it
// has not stored yet.
func Prune(ctx context.Context, store history.Store, ws *workspace.Workspace, cutoff time.Time, dryRun bool) (Pruned, error) {
	out := Pruned{Removed: []File{}}
	files, err := ws.ResultFiles()
	if err != nil {
		return out, err
	}
	if len(files) == 0 {
		return out, nil
	}
	ids, err := everyone(ctx, store)
	if err != nil {
		return out, err
	}
	named, err := namedBy(ctx, store, ids)
	if err != nil {
		return out, err
	}
	for _, f := range files {
		switch {
		case !f.Regular:
			out.Other = append(out.Other, f.Path)
		case named[f.Path]:
			out.Named++
		case !f.Modified.Before(cutoff):
			out.Young++
		default:
			if !dryRun {
				if err := ws.RemoveResult(f.Path); errors.Is(err, fs.ErrNotExist) {
					continue // removed meanwhile
				} else if err != nil {
					out.NotRemoved = append(out.NotRemoved, fmt.Sprintf("%s: %v", f.Path, err))
					continue
				}
			}
			out.Removed = append(out.Removed, File{Path: f.Path, Size: f.Size, Modified: f.Modified})
			out.Bytes += f.Size
		}
	}
	return out, nil
}
