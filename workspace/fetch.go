package workspace

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// A conversation resumed in another workspace (another host sharing its
// store) still names its spill files and saved payloads in the text the
// model read: `.myelin/tool-results/…`. The agent keeps their bytes in a
// shared store and hands the reading tools a Fetch in their context; a
// read (or a grep naming the file) of such a file missing here writes it
// from the store first, then reads it as usual, so the model's ready call
// gives the same text on any host.

// Fetch returns the bytes kept for the file at path (workspace-relative,
// under ResultsDir) of the conversation a tool call runs for, with their
// SHA-256 in lower-case hex as the store keeps them. When the store keeps
// no such file it returns an error wrapping fs.ErrNotExist. It must not
// write anything: the workspace checks the bytes and writes the file.
type Fetch func(ctx context.Context, path string) (data []byte, sha256 string, err error)

type fetchKey struct{}

// WithFetch returns ctx carrying f, which the workspace's read and grep
// tools called with it ask for a missing file under ResultsDir (see
// Fetch). A nil f is no Fetch.
func WithFetch(ctx context.Context, f Fetch) context.Context {
	return context.WithValue(ctx, fetchKey{}, f)
}

// fetchFrom is the Fetch ctx carries, nil when none.
func fetchFrom(ctx context.Context) Fetch {
	f, _ := ctx.Value(fetchKey{}).(Fetch)
	return f
}

// fetchMissing writes the file p names from the store, through ctx's
// Fetch, when p (a path as a tool is given it) is a file directly under
// ResultsDir that is not in the workspace and the store keeps it. It
// writes nothing anywhere else, never replaces a file (one that appears
// meanwhile is kept as it is), and checks the bytes against their hash
// before it writes them. It returns nil when there is nothing to do or
// the store keeps no such file (the read then says the file does not
// exist), and an error naming the file when fetching or writing it failed.
func (w *Workspace) fetchMissing(ctx context.Context, p string) error {
	fetch := fetchFrom(ctx)
	if fetch == nil {
		return nil
	}
	rel, err := pathArg(p)
	if err != nil || !isResultFile(rel) {
		return nil
	}
	if _, err := w.root.Lstat(rel); !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or not to be looked into: the read says which
	}
	data, sum, err := fetch(ctx, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	name := clip(showName(rel))
	if err != nil {
		return fmt.Errorf("%s is not in this workspace, and fetching it from the conversation's store failed: %w", name, err)
	}
	if got := sha256Hex(data); got != sum {
		return fmt.Errorf("%s is not in this workspace, and the store's copy is damaged: its bytes have sha256 %s, not the %s they are kept by; it was not written", name, got, sum)
	}
	if err := w.writeFetched(rel, data); err != nil {
		return fmt.Errorf("%s is not in this workspace, and writing it from the conversation's store failed: %w", name, err)
	}
	return nil
}

// isResultFile reports whether rel (cleaned, relative) names a file
// directly under ResultsDir, where spill files and saved payloads are.
func isResultFile(rel string) bool {
	dir, name := path.Split(rel)
	return dir == ResultsDir+"/" && checkResultName(name) == nil
}

// writeFetched writes data as the new file rel under ResultsDir, whole or
// not at all: into a fresh temporary name first, then linked as rel (a
// link never replaces a file, and a reader never sees it half written).
// A file at rel made meanwhile is kept. Where links cannot be made, rel
// is created exclusively and written in place.
func (w *Workspace) writeFetched(rel string, data []byte) error {
	if err := makeOwnDir(w.root, w.dir, ResultsDir); err != nil {
		return w.ownErr(err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	tmp := ResultsDir + "/.fetching-" + hex.EncodeToString(b)
	if err := w.writeNew(tmp, data); err != nil {
		return err
	}
	err := w.root.Link(tmp, rel)
	_ = w.root.Remove(tmp)
	switch {
	case err == nil, errors.Is(err, fs.ErrExist):
		return nil
	}
	err = w.writeNew(rel, data)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// writeNew creates the file rel, which must not exist, with the mode
// spill files have, and writes data to it; on failure nothing is left.
// A file already at rel is an error wrapping fs.ErrExist.
func (w *Workspace) writeNew(rel string, data []byte) error {
	f, err := w.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	if err != nil {
		return explain(rel, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = w.root.Remove(rel)
		return explain(rel, werr)
	}
	return nil
}

// sha256Hex is data's SHA-256 in lower-case hex, as Fetch gives it.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ReadResult returns the bytes of the file at path (workspace-relative,
// directly under ResultsDir), as Save and its kin return paths: how the
// agent reads back a file it saved to keep it in a shared store too. It
// reads nothing else and nothing over 1 GiB (what workspace--read reads).
func (w *Workspace) ReadResult(path string) ([]byte, error) {
	rel, err := Rel(path)
	if err != nil {
		return nil, err
	}
	if !isResultFile(rel) {
		return nil, fmt.Errorf("%s is not a file of %s", short(path), ResultsDir)
	}
	_, data, err := w.readFile(rel, maxReadSize)
	return data, err
}
