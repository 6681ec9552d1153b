package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// A conversation's spill files and saved payloads are named in the text the
// model read, and live in the workspace that wrote them. When the agent's
// store is shared (history.Blobs, Shared) — other hosts, other workspace
// directories continue the same conversations — every file the turn saves
// is kept in the store too, in the same turn and before the result that
// names it is stored or sent (contract §7), and the workspace tools of the
// turn are given a Fetch that writes a file missing here back from the
// store (workspace.WithFetch), so the model's ready workspace--read call
// gives the same text on any host. With a store that is not shared (the
// default SQLite file, inside the workspace), nothing changes. (The
// versions of the files workspace--write and --edit change are kept in
// any store that keeps files, shared or not: journal.go.)

// sharedBlobs is the agent's store as Blobs when it is shared and there
// is a workspace to save to; nil otherwise.
func (a *Agent) sharedBlobs() history.Blobs {
	b, ok := a.Store.(history.Blobs)
	if !ok || !b.Shared() || a.Env.Store == nil {
		return nil
	}
	return b
}

// files returns what the tool calls of conversation id run with: ctx
// carrying the Fetch of the conversation's files, and the result.Env whose
// Store keeps each file it saves in the shared store as well. With a store
// that is not shared they are ctx and a.Env as they are.
func (a *Agent) files(ctx context.Context, id string) (context.Context, result.Env) {
	ctx = tool.WithConversation(ctx, id) // tool.ConversationOf, for the calls' tools
	blobs := a.sharedBlobs()
	if blobs == nil {
		return ctx, a.Env
	}
	env := a.Env
	k := keeping{ws: a.Env.Store, blobs: blobs, ctx: context.WithoutCancel(ctx), id: id}
	if fst, ok := a.Env.Store.(result.FileStore); ok {
		if r, ok := a.Env.Store.(savedReader); ok {
			env.Store = keepingFiles{keeping: k, fs: fst, read: r}
		} else {
			env.Store = k // no read back: files pass through Save, in memory
		}
	} else {
		env.Store = k
	}
	return workspace.WithFetch(ctx, fetchFrom(blobs, id)), env
}

// fetchFrom is the workspace.Fetch of conversation id's files kept in blobs.
func fetchFrom(blobs history.Blobs, id string) workspace.Fetch {
	return func(ctx context.Context, path string) ([]byte, string, error) {
		hash, data, err := blobs.BlobAt(ctx, id, path)
		if errors.Is(err, history.ErrNotFound) {
			return nil, "", fmt.Errorf("%w: %w", err, fs.ErrNotExist)
		}
		return data, hash, err
	}
}

// savedReader reads back a file the workspace saved (the workspace
// implements it): how a file saved with SaveFile or SaveFrom, which never
// passes through the agent's memory, is kept in the store too.
type savedReader interface {
	ReadResult(path string) ([]byte, error)
}

// keeping is a result.Store that saves to the workspace (ws) and keeps
// each file saved, as saved, in the shared store under the conversation
// and the path the workspace gave it. A file the store cannot keep is an
// error of the save, so the result says the file was not kept rather than
// name a file other hosts cannot read; it stays in this workspace.
type keeping struct {
	ws    result.Store
	blobs history.Blobs
	ctx   context.Context // the turn's, not cancelled with it: the round's results are kept all the same
	id    string
}

// Save saves data to the workspace, then keeps it in the store.
func (k keeping) Save(name, data string) (string, error) {
	p, err := k.ws.Save(name, data)
	if err != nil {
		return "", err
	}
	return p, k.keep(p, []byte(data))
}

// keep puts the file saved at path in the store.
func (k keeping) keep(path string, data []byte) error {
	if _, err := k.blobs.PutBlob(k.ctx, k.id, path, data); err != nil {
		return fmt.Errorf("not kept in the conversation's shared store, where other hosts read it: %w", err)
	}
	return nil
}

// keepingFiles is keeping over a workspace that also takes whole files
// (result.FileStore): they are saved without passing through memory, then
// read back to be kept.
type keepingFiles struct {
	keeping
	fs   result.FileStore
	read savedReader
}

// SaveFile moves the file at src into the workspace, then keeps it.
func (k keepingFiles) SaveFile(name, src string) (string, error) {
	p, err := k.fs.SaveFile(name, src)
	if err != nil {
		return "", err
	}
	return p, k.keepSaved(p)
}

// SaveFrom saves what r yields to the workspace, then keeps it.
func (k keepingFiles) SaveFrom(name string, r io.Reader) (string, error) {
	p, err := k.fs.SaveFrom(name, r)
	if err != nil {
		return "", err
	}
	return p, k.keepSaved(p)
}

// keepSaved reads back the file saved at path and keeps it.
func (k keepingFiles) keepSaved(path string) error {
	data, err := k.read.ReadResult(path)
	if err != nil {
		return fmt.Errorf("not read back to be kept in the conversation's shared store: %w", err)
	}
	return k.keep(path, data)
}
