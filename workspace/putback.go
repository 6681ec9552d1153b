package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// This file is what a rewind puts files back through (package rewind's
// Workspace, docs/branches.md "Putting files back"): the same checks as
// the write tool's, so that a rewind reaches no file a tool could not
// have written.

// ErrNowLinked is wrapped by the error of Current and PutBack for a path
// of which a part is now a symbolic link (the file itself, or a
// directory on the way to it). The tools record a file's path after
// following links (history.FileChange), so a recorded path leads to
// itself; one that now goes through a link leads to a file the tools did
// not change (someone moved the file and left a link), and is left as it
// is. The error's words say which part is a link, to where, and that the
// file was left.
var ErrNowLinked = errors.New("a part of the path is now a symbolic link")

// Current returns the content of the workspace file at path (relative to
// the root), and false when there is none. The path is checked as a
// tool's (no `..`, no symbolic link leading out), and must lead to
// itself: a part of it that is now a symbolic link is ErrNowLinked; a
// directory or another
// file that is not a regular one is an error, as is a file over
// MaxJournaled bytes, larger than any content a rewind keeps (it cannot
// be one the tools wrote).
func (w *Workspace) Current(path string) (data []byte, exists bool, err error) {
	rel, err := Rel(path)
	if err != nil {
		return nil, false, err
	}
	real, err := w.Resolve(rel)
	if err != nil {
		return nil, false, err
	}
	if real != rel {
		return nil, false, w.nowLinked(rel, real)
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
// one of the files the tools never write, never over a directory, and no
// part of it now a symbolic link: ErrNowLinked, as Current's), missing
// directories made, the new content renamed over the name, and an
// existing file's permissions kept. It must not be used but to put back
// what a tool recorded (package rewind).
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
	if real != rel {
		return w.nowLinked(rel, real)
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

// nowLinked is the ErrNowLinked error for rel, which resolves to real
// (another path): it names the first part of rel that is a symbolic link
// and where it points, found again here (a path resolves elsewhere only
// through a link).
func (w *Workspace) nowLinked(rel, real string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		cur := path.Join(parts[:i+1]...)
		st, err := w.root.Lstat(cur)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		to, err := w.root.Readlink(cur)
		if err != nil {
			to = "?"
		}
		if cur == rel {
			return &explained{fmt.Sprintf("%s is now a symbolic link (to %s): the tools changed the file at that path, not through a link, so it was left as it is", clip(rel), clip(to)), ErrNowLinked}
		}
		return &explained{fmt.Sprintf("%s is now a symbolic link (to %s): the tools changed %s at that path, not through a link, so it was left as it is", clip(cur), clip(to), clip(rel)), ErrNowLinked}
	}
	return &explained{fmt.Sprintf("%s now leads to %s (through a symbolic link): the tools changed the file at that path, so it was left as it is", clip(rel), clip(real)), ErrNowLinked}
}
