package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// myelin's own files in a workspace (the conversation store, the trace
// log, the MCP servers' logs, shell output files, spill files) live under
// OwnDir. A cloned repository can plant a symbolic link there (.myelin
// itself, .myelin/logs, .myelin/logs/trace.log) to make myelin write
// outside the workspace. What is here opens those files with the same
// confinement as the tools: every directory on the way is checked with
// Lstat and must be a real directory, the file itself must not be a
// symbolic link (and is opened with O_NOFOLLOW), and everything is opened
// through an os.Root of the workspace. A link is refused with an
// *OwnLinkError naming it and where it leads; it is never followed, not
// even to a place inside the workspace.

// OwnDir is the directory of myelin's own files, relative to the
// workspace root.
const OwnDir = ".myelin"

// OwnDirs are the directories under OwnDir that myelin writes in; CheckOwn
// refuses any of them that is a symbolic link or not a directory.
var OwnDirs = []string{OwnDir, OwnDir + "/logs", OwnDir + "/shell", ResultsDir}

// OwnLinkError says that one of myelin's own files or directories is a
// symbolic link (or not what it must be), which myelin refuses to follow.
// It must not be taken for a missing file: a caller stops, or skips the
// file with a warning, and never falls back to the path.
type OwnLinkError struct {
	Path   string // the OS path refused
	Target string // where the link leads ("" when it is not a link)
	What   string // what it is when it is not a link ("a file", ...)
}

// Error names the path, where it leads and what to do about it.
func (e *OwnLinkError) Error() string {
	if e.Target != "" {
		return fmt.Sprintf("%s is a symbolic link (to %s); myelin never follows a link among its own files, which could make it write outside the workspace: remove the link (a real directory or file is made in its place)", e.Path, e.Target)
	}
	return fmt.Sprintf("%s is %s, where myelin keeps a directory of its own: move it away", e.Path, e.What)
}

// CheckOwn checks that none of OwnDirs in the workspace at root is a
// symbolic link or anything but a directory (a missing one is fine: it is
// made when needed). A command that writes in the workspace calls it
// before it starts, and refuses to start on its error. It makes nothing
// and must not be taken as a lock: a link can be planted after it; the
// openers here check again.
func CheckOwn(root string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", root, err)
	}
	defer r.Close()
	for _, d := range OwnDirs {
		if err := checkOwnEntry(r, root, d, true); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// CheckOwnFile checks the file rel (slash-separated, under OwnDir) in the
// workspace at root and the directories on its way: none may be a symbolic
// link, and the file, when it exists, must be a regular file. A missing
// file or directory is not an error.
func CheckOwnFile(root, rel string) error { return checkOwnPath(root, rel, false) }

// CheckOwnDir is CheckOwnFile for a directory of myelin's own: it and the
// directories on its way must be directories, not symbolic links.
func CheckOwnDir(root, rel string) error { return checkOwnPath(root, rel, true) }

func checkOwnPath(root, rel string, dir bool) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", root, err)
	}
	defer r.Close()
	parts := strings.Split(path.Clean(rel), "/")
	for i := range parts {
		err := checkOwnEntry(r, root, strings.Join(parts[:i+1], "/"), dir || i < len(parts)-1)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkOwnEntry Lstats rel under r: a symbolic link is an *OwnLinkError,
// and so is a directory where a file is wanted or the other way round.
func checkOwnEntry(r *os.Root, root, rel string, dir bool) error {
	st, err := r.Lstat(rel)
	if err != nil {
		return err
	}
	p := filepath.Join(root, filepath.FromSlash(rel))
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		target, _ := r.Readlink(rel)
		if target == "" {
			target = "?"
		}
		return &OwnLinkError{Path: p, Target: target}
	case dir && !st.IsDir():
		return &OwnLinkError{Path: p, What: "not a directory"}
	case !dir && !st.Mode().IsRegular():
		return &OwnLinkError{Path: p, What: "not a regular file"}
	}
	return nil
}

// MakeOwnDir makes the directory rel (slash-separated, under OwnDir) in
// the workspace at root one component at a time, refusing any component
// that is a symbolic link or not a directory, and returns its OS path.
func MakeOwnDir(root, rel string) (string, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", root, err)
	}
	defer r.Close()
	if err := makeOwnDir(r, root, rel); err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

func makeOwnDir(r *os.Root, root, rel string) error {
	parts := strings.Split(path.Clean(rel), "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/")
		err := checkOwnEntry(r, root, d, true)
		if errors.Is(err, fs.ErrNotExist) {
			err = r.Mkdir(d, 0o755)
			if errors.Is(err, fs.ErrExist) { // made meanwhile: check it again
				err = checkOwnEntry(r, root, d, true)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// OpenOwn opens the file rel (slash-separated, under OwnDir) in the
// workspace at root for myelin's own use, with flag and perm as
// os.OpenFile takes them: the directories on its way are made as
// MakeOwnDir makes them, and a file that is a symbolic link is refused
// (*OwnLinkError), never followed. It must not be used for files the
// model names: the tools have their own checks.
func OpenOwn(root, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	defer r.Close()
	rel = path.Clean(rel)
	if err := makeOwnDir(r, root, path.Dir(rel)); err != nil {
		return nil, err
	}
	if err := checkOwnEntry(r, root, rel, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := r.OpenFile(rel, flag|syscall.O_NOFOLLOW|syscall.O_NOCTTY|syscall.O_NONBLOCK, perm)
	if err != nil {
		if cerr := checkOwnEntry(r, root, rel, false); cerr != nil && !errors.Is(cerr, fs.ErrNotExist) {
			return nil, cerr // swapped for a link after the check
		}
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, &OwnLinkError{Path: filepath.Join(root, filepath.FromSlash(rel)), What: "not a regular file"}
	}
	return f, nil
}

// Log is one of myelin's own log files (the trace log, an MCP server's
// log), opened with OpenOwn for appending and capped: when a write would
// take it over its cap, the file is renamed to the same name plus ".1"
// (replacing the one there) and a new one begun, so that a log takes at
// most twice its cap on disk. It must not be used for anything but logs:
// what is rotated away is lost at the next rotation.
type Log struct {
	root, rel string
	max       int64
	mu        sync.Mutex
	f         *os.File
	size      int64
	err       error // why the log stopped (a rotation that failed)
}

// OpenLog opens the log rel (under OwnDir) in the workspace at root,
// capped at max bytes (max <= 0: no cap). A log already over its cap is
// rotated at once.
func OpenLog(root, rel string, max int64) (*Log, error) {
	l := &Log{root: root, rel: path.Clean(rel), max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	if max > 0 && l.size >= max {
		if err := l.rotate(); err != nil {
			l.f.Close()
			return nil, err
		}
	}
	return l, nil
}

func (l *Log) open() error {
	f, err := OpenOwn(l.root, l.rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	return nil
}

// rotate renames the log to rel.1 and opens a new one.
func (l *Log) rotate() error {
	r, err := os.OpenRoot(l.root)
	if err != nil {
		return err
	}
	defer r.Close()
	old := l.rel + ".1"
	if err := checkOwnEntry(r, l.root, old, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if err := r.Remove(old); err != nil { // a link planted there: it goes, not what it leads to
			return err
		}
	}
	if err := r.Rename(l.rel, old); err != nil {
		return err
	}
	l.f.Close()
	return l.open()
}

// Path is the log's OS path.
func (l *Log) Path() string { return filepath.Join(l.root, filepath.FromSlash(l.rel)) }

// Size is how many bytes the current file holds (after a rotation, only
// what was written since).
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// Write appends p, rotating first when p would take the log over its cap.
// A write larger than the cap is cut to the cap.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	n := len(p)
	if l.max > 0 {
		if l.size > 0 && l.size+int64(len(p)) > l.max {
			if err := l.rotate(); err != nil {
				l.err = fmt.Errorf("rotating %s: %w", l.Path(), err)
				return 0, l.err
			}
		}
		if int64(len(p)) > l.max {
			p = p[:l.max]
		}
	}
	w, err := l.f.Write(p)
	l.size += int64(w)
	if err != nil {
		return w, err
	}
	return n, nil
}

// Close closes the log's file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
