package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// File names are shown by the tools (list, glob, grep, read's footer) and
// given back to them as paths. A name that could forge a line of output or
// that JSON cannot carry is shown quoted, and the quoted form is accepted
// back:
//
//   - a name is shown as it is when it is plain: valid UTF-8, every
//     character printable (unicode.IsPrint: no control character such as a
//     newline or tab, no format character such as a bidi override), no
//     " -> " (which list writes between a link and its target), and no
//     double quote at the start of it or of any of its components;
//   - any other name is shown as a Go string literal (strconv.Quote):
//     "nl\nfake.txt", "caf\xe9.txt" — JSON's escapes, plus \xNN for a byte
//     that is not UTF-8, which no JSON string can carry;
//   - a path given to read, grep or list may be such a literal as a whole
//     ("sub/nl\nx.txt") or in any of its components (sub/"nl\nx.txt"): a
//     path or component that starts and ends with a double quote is
//     unquoted first. A file whose name really starts and ends with a
//     double quote is therefore given quoted too, as it is shown.

// showName is a workspace path or name as the tools write it: itself when
// it is plain, else quoted (see above). It must not be used to build a path
// for the file system; pathArg reverses it.
func showName(p string) string {
	if plainName(p) {
		return p
	}
	return strconv.Quote(p)
}

// plainName reports whether a name is shown as it is.
func plainName(p string) bool {
	if strings.HasPrefix(p, `"`) || strings.Contains(p, `/"`) || strings.Contains(p, " -> ") {
		return false
	}
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size == 1 || !unicode.IsPrint(r) {
			return false
		}
		i += size
	}
	return true
}

// pathArg turns a path given to a tool back into the path it names,
// unquoting a quoted path or quoted components (see above), then checks it
// as Rel does. A quoted form that does not unquote is an error that says
// so.
func pathArg(p string) (string, error) {
	if quoted(p) {
		if u, err := strconv.Unquote(p); err == nil {
			return Rel(u)
		}
		if !strings.Contains(p, `"/"`) { // not quoted components either
			return "", fmt.Errorf("path %s starts and ends with a double quote but is not a valid quoted name (a Go string literal such as \"a\\nb.txt\")", short(p))
		}
	}
	if strings.Contains(p, `"`) {
		parts := strings.Split(p, "/")
		for i, part := range parts {
			if !quoted(part) {
				continue
			}
			u, err := strconv.Unquote(part)
			if err != nil {
				return "", fmt.Errorf("path %s: the component %s starts and ends with a double quote but is not a valid quoted name (a Go string literal such as \"a\\nb.txt\"): %v", short(p), short(part), err)
			}
			if u == "" || strings.Contains(u, "/") {
				return "", fmt.Errorf("path %s: the quoted component %s is not one file name", short(p), short(part))
			}
			parts[i] = u
		}
		p = strings.Join(parts, "/")
	}
	return Rel(p)
}

func quoted(s string) bool { return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' }

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

// openRegular opens a regular file for reading, refusing anything else
// before it is opened: a directory, a named pipe, a device, a socket. It
// opens with O_NONBLOCK and checks again what it opened, so that a file
// swapped for a named pipe after the check cannot block it either.
func (w *Workspace) openRegular(rel string) (*os.File, fs.FileInfo, error) {
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
