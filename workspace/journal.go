package workspace

import (
	"context"
	"fmt"
	"io"
)

// A rewind puts back the workspace files the conversation's tools wrote
// or edited after the point it goes back to (docs/branches.md "Files go
// back"). For that the agent hands the write and edit tools a Journal in
// their context, and each tells it what it is about to replace before it
// replaces it; the agent keeps both contents in its store. The workspace
// keeps nothing of it itself.

// Change is a write or an edit about to replace a file, as told to a
// Journal before the file changes.
type Change struct {
	// Path is the file's path relative to the workspace root,
	// slash-separated.
	Path string
	// Existed reports that the file existed: the call replaces it.
	Existed bool
	// Before is the content it replaces, nil when it did not exist or is
	// over MaxJournaled bytes (BeforeKept then says which).
	Before []byte
	// BeforeKept reports that Before holds the whole content replaced.
	BeforeKept bool
	// After is the content the call writes.
	After []byte
}

// MaxJournaled is the largest content, in bytes, a write reads to tell
// its Journal what it replaces (history.MaxKeptFile, the most a store
// keeps for a rewind, is the same).
const MaxJournaled = 16 << 20

// Journal is told each change of a write or an edit before the file
// changes (Change). An error refuses the change: the file is left as it
// was and the call's error says why, so that no change is made that a
// rewind could not take back. It must not touch the workspace.
type Journal func(ctx context.Context, c Change) error

type journalKey struct{}

// WithJournal returns ctx carrying j, told by the workspace's write and
// edit tools called with it of each change they make (see Journal). A nil
// j is no Journal.
func WithJournal(ctx context.Context, j Journal) context.Context {
	return context.WithValue(ctx, journalKey{}, j)
}

// journalOf is the Journal ctx carries, nil when none.
func journalOf(ctx context.Context) Journal {
	j, _ := ctx.Value(journalKey{}).(Journal)
	return j
}

// readJournaled reads the file at real (resolved, existing) for a
// Journal: its content when it is at most MaxJournaled bytes, kept true;
// nil and false when it is larger, read no further than that.
func (w *Workspace) readJournaled(real string) (data []byte, kept bool, err error) {
	f, err := w.root.Open(real)
	if err != nil {
		return nil, false, explain(real, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxJournaled {
		return nil, false, nil
	}
	data, err = io.ReadAll(io.LimitReader(f, MaxJournaled+1))
	switch {
	case err != nil:
		return nil, false, explain(real, err)
	case len(data) > MaxJournaled: // grew since its size was read
		return nil, false, nil
	}
	return data, true, nil
}

// notKept is the error of a write or an edit its Journal refused, or whose
// old content could not be read to be told to it: the file is unchanged.
func notKept(real string, err error) error {
	return fmt.Errorf("%s was not changed: what it holds now could not be kept for a rewind to put back: %w", clip(real), err)
}
