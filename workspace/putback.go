package workspace

import (
	"errors"
	"fmt"
	"io/fs"
)

// This file is what a rewind puts files back through (package rewind's
// Workspace, docs/branches.md "Putting files back"): the same checks as
// the write tool's, so that a rewind reaches no file a tool could not
// have written.

// Current returns the content of the workspace file at path (relative to
// the root), and false when there is none. The path is checked as a
// tool's (no `..`, no symbolic link leading out); a directory or another
// file that is not a regular one is an error, as is a file over
// MaxJournaled bytes, larger than any content a rewind keeps (it cannot
// be one the tools wrote).
func (w *Workspace) Current(path string) (data []byte, exists bool, err error) {
	rel, err := Rel(path)
	if err != nil {
		return nil, false, err
	}
	real, err := w.resolve(rel)
	if err != nil {
		return nil, false, err
	}
	st, err := w.root.Lstat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, explain(real, err)
	case st.IsDir():
		return nil, false, fmt.Errorf("%s is a directory, not a file", clip(rel))
	case !st.Mode().IsRegular():
		return nil, false, fmt.Errorf("%s is %s, not a regular file", clip(rel), kindOf(st.Mode()))
	case st.Size() > MaxJournaled:
		return nil, false, fmt.Errorf("%s is %d bytes, over the %d bytes of any content a rewind keeps", clip(rel), st.Size(), MaxJournaled)
	}
	data, err = w.root.ReadFile(real)
	if err != nil {
		return nil, false, explain(real, err)
	}
	return data, true, nil
}

// PutBack makes the workspace file at path hold data, or removes it when
// remove is set (a file already gone is left so). It writes as the write
// tool does: the path checked (no `..`, no symbolic link leading out, not
// one of the files the tools never write, never over a directory),
// missing directories made, the new content renamed over the name, and
// an existing file's permissions kept. It must not be used but to put
// back what a tool recorded (package rewind).
func (w *Workspace) PutBack(path string, data []byte, remove bool) error {
	rel, err := Rel(path)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("path is empty: no file to put back")
	}
	real, exists, perm, err := w.writable(rel)
	if err != nil {
		return err
	}
	if !remove {
		return w.replace(real, data, exists, perm)
	}
	if !exists {
		return nil
	}
	if err := w.root.Remove(real); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return explain(real, err)
	}
	return nil
}
