package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// The reading tools (read, grep, list, glob) open regular files and
// directories only. What a path names is found with stat or lstat, which
// open nothing, and anything else (a named pipe, which would block the
// tool; a device, which could do anything; a socket) is refused or passed
// over before it is opened. Files are then opened with O_NONBLOCK and
// directories with O_DIRECTORY, and checked again, so that a name swapped
// after the check is refused too, never waited on.

// statArg checks a path given to a tool (pathArg) and stats what it names,
// following symbolic links inside the workspace. It never opens the file.
func (w *Workspace) statArg(p string) (string, fs.FileInfo, error) {
	rel, err := pathArg(p)
	if err != nil {
		return "", nil, err
	}
	st, err := w.root.Stat(rel)
	if err != nil {
		return rel, nil, explain(showName(rel), err)
	}
	return rel, st, nil
}

// notRegular is the error for a path that names neither a regular file nor
// a directory: a named pipe would block the tool that opened it, a device
// could do anything, so they are refused before they are opened.
func notRegular(rel string, m fs.FileMode) error {
	return fmt.Errorf("%s is %s, not a regular file or a directory; the tools do not open it", clip(showName(rel)), kindOf(m))
}

// OpenRegular opens the regular file rel (a path relative to the
// workspace's root, checked as Rel checks one) for reading, confined to
// the workspace as the tools are (no symbolic link leads out), and
// refuses anything else before it is opened: a directory, a named pipe,
// a device, a socket. It opens with O_NONBLOCK and checks again what it
// opened, so that a file swapped for a named pipe after the check cannot
// block it either. It is how anything outside this package (the MCP
// server's resource reads) opens a workspace file to read it, so that
// reading never waits on what is not a file. It does not check the
// permission policy, and the file it returns must not be written; the
// caller closes it. Its errors say what was wrong in words (a missing
// file's wraps fs.ErrNotExist).
func (w *Workspace) OpenRegular(rel string) (*os.File, fs.FileInfo, error) {
	st, err := w.root.Stat(rel)
	if err != nil {
		return nil, nil, explain(showName(rel), err)
	}
	if st.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory, not a file", clip(showName(rel)))
	}
	if !st.Mode().IsRegular() {
		return nil, nil, notRegular(rel, st.Mode())
	}
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, explain(showName(rel), err)
	}
	st, err = f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = notRegular(rel, st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// readDir lists a directory, opening it with O_DIRECTORY so that a name
// swapped for a named pipe after the check is refused, not waited on.
func (w *Workspace) readDir(rel string) ([]fs.DirEntry, error) {
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, explain(showName(rel), err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, explain(showName(rel), err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// walk calls fn for rel and, when it is a directory, for everything below
// it, in lexical order, as fs.WalkDir does (fn may return fs.SkipDir), but
// it opens directories with readDir: it never opens anything else, and
// follows no symbolic link below rel (rel itself is followed, inside the
// workspace). A directory that cannot be read is passed to fn with its
// error.
func (w *Workspace) walk(rel string, fn func(p string, d fs.DirEntry, err error) error) error {
	st, err := w.root.Stat(rel)
	if err != nil {
		return fn(rel, nil, explain(showName(rel), err))
	}
	err = w.walkDir(rel, fs.FileInfoToDirEntry(st), fn)
	if err == fs.SkipDir || err == fs.SkipAll {
		return nil
	}
	return err
}

func (w *Workspace) walkDir(p string, d fs.DirEntry, fn func(string, fs.DirEntry, error) error) error {
	if err := fn(p, d, nil); err != nil || !d.IsDir() {
		if err == fs.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	entries, err := w.readDir(p)
	if err != nil {
		if err := fn(p, d, err); err != nil {
			if err == fs.SkipDir {
				return nil
			}
			return err
		}
	}
	for _, e := range entries {
		if err := w.walkDir(path.Join(p, e.Name()), e, fn); err != nil {
			if err == fs.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
