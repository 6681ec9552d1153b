// Package workspace owns the workspace: a directory tree that tools may read
// and write, and nothing outside it. Every path is relative to its root; an
// absolute path, a `..`, a NUL or a symbolic link that leads out is refused
// with an error that says so. It keeps spill files and saved payloads under
// .myelin/tool-results/ (it is the result.Store), and it defines the
// workspace tools of contract §11 (workspace--read, --grep, --list, --glob,
// --write, --edit). It also opens myelin's own files under .myelin/ (store
// checks, logs, shell output) without following a symbolic link
// (ownfiles.go).
//
// It must not convert results into text for the conversation: its tools
// return their own text and structured content, and package result does the
// rest. It does not run programs (package shell does).
package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/myelin-run/myelin/result"
)

// ResultsDir is where spill files and saved payloads go, relative to the
// workspace root.
const ResultsDir = ".myelin/tool-results"

// Workspace is a directory tree that tools are confined to.
type Workspace struct {
	dir  string
	root *os.Root
	// changing serializes the writes and edits of one file (pathlock.go).
	changing pathLocks
}

// Open opens the workspace rooted at dir ("" means the current directory).
func Open(dir string) (*Workspace, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", dir)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return &Workspace{dir: abs, root: root}, nil
}

// Dir is the workspace root's absolute path.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the workspace's handle on its root.
func (w *Workspace) Close() error { return w.root.Close() }

// Rel checks a path given by the model or a user and returns it cleaned,
// relative to the root ("." for the root itself). It refuses what could lead
// outside: an absolute path, a `..` component, a NUL byte. Symbolic links
// are checked when the path is used.
func Rel(p string) (string, error) {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return "", fmt.Errorf("path %s contains a NUL byte", short(p))
	case p == "":
		return ".", nil
	case path.IsAbs(p) || filepath.IsAbs(p):
		return "", fmt.Errorf("path %s is absolute; paths are relative to the workspace root", short(p))
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return "", fmt.Errorf("path %s contains \"..\"; paths must stay inside the workspace", short(p))
		}
	}
	return path.Clean(filepath.ToSlash(p)), nil
}

// explain turns an error from the root into one the model can act on.
// The root's error stays underneath (errors.Is(err, fs.ErrNotExist)
// holds for a missing file), only its words are replaced.
func explain(p string, err error) error {
	p = clip(p)
	var pe *fs.PathError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return &explained{p + " does not exist in the workspace", err}
	case errors.Is(err, fs.ErrPermission):
		return &explained{p + ": permission denied", err}
	case errors.Is(err, syscall.ENOTDIR):
		return &explained{p + ": a part of the path is a file, not a directory", err}
	case errors.Is(err, syscall.ELOOP):
		return &explained{p + ": too many symbolic links", err}
	case errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes"):
		// os.Root's error for a path that escapes it is not exported:
		// its words are all there is to tell it by.
		return &explained{p + " leads outside the workspace (through a symbolic link); it cannot be used", err}
	case errors.As(err, &pe):
		return &explained{p + ": " + pe.Err.Error(), err}
	}
	return fmt.Errorf("%s: %w", p, err)
}

// explained is an error of the root's in words the model can act on;
// the root's error (an *fs.PathError, say) is what it wraps.
type explained struct {
	words string
	err   error
}

func (e *explained) Error() string { return e.words }
func (e *explained) Unwrap() error { return e.err }

// stat is Stat on a checked path.
func (w *Workspace) stat(p string) (string, fs.FileInfo, error) {
	rel, err := Rel(p)
	if err != nil {
		return "", nil, err
	}
	st, err := w.root.Stat(rel)
	if err != nil {
		return rel, nil, explain(rel, err)
	}
	return rel, st, nil
}

// readFile reads a whole regular file on a checked path, refusing
// directories and files over maxSize.
func (w *Workspace) readFile(p string, maxSize int64) (string, []byte, error) {
	rel, st, err := w.stat(p)
	if err != nil {
		return rel, nil, err
	}
	if st.IsDir() {
		return rel, nil, fmt.Errorf("%s is a directory, not a file; workspace--list lists it", rel)
	}
	if !st.Mode().IsRegular() {
		return rel, nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if st.Size() > maxSize {
		return rel, nil, fmt.Errorf("%s is %d bytes, over the %d bytes this tool reads", rel, st.Size(), maxSize)
	}
	data, err := w.root.ReadFile(rel)
	if err != nil {
		return rel, nil, explain(rel, err)
	}
	return rel, data, nil
}

// Save writes data to a new file under ResultsDir and returns its
// workspace-relative path; it implements result.Store. It never overwrites a
// file: when name is taken it tries name-2.ext, name-3.ext and so on.
func (w *Workspace) Save(name, data string) (string, error) {
	return w.SaveFrom(name, strings.NewReader(data))
}

// SaveFrom writes what r yields to a new file under ResultsDir, named as
// Save names it, and returns its workspace-relative path (result.FileStore).
// When r or the write fails, the part written is removed; r's own error is
// returned as it is, so that the conversion can tell its reasons to stop
// (the text turned out binary) from a full disk.
func (w *Workspace) SaveFrom(name string, r io.Reader) (string, error) {
	f, p, err := w.createResult(name)
	if err != nil {
		return "", err
	}
	_, werr := io.Copy(onlyWriter{f}, r)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = w.root.Remove(p)
		var pe *fs.PathError
		if errors.As(werr, &pe) {
			return "", explain(p, werr)
		}
		return "", werr
	}
	return p, nil
}

// onlyWriter hides the file's ReadFrom, so that io.Copy reads r through
// its Read and its errors come back as r's (a file's ReadFrom wraps them).
type onlyWriter struct{ io.Writer }

// SaveFile moves the file at the OS path src to a new file under
// ResultsDir, named as Save names it, and returns its workspace-relative
// path (result.FileStore): how a tool's output file (shell--run's) becomes
// its spill file without passing through memory. A file inside the
// workspace is linked under the first free name (a link never replaces a
// file, so nothing is overwritten) and its old name removed; one outside
// the workspace, or on a file system without links, is copied and then
// removed. (A rename over a name reserved with O_EXCL would do as well,
// but ext4 then allocates and starts writing out the whole file in the
// rename: 15 ms for 200 MB, against 35 µs for the link.)
func (w *Workspace) SaveFile(name, src string) (string, error) {
	if err := checkResultName(name); err != nil {
		return "", err
	}
	if rel, ok := w.inside(src); ok {
		if err := makeOwnDir(w.root, w.dir, ResultsDir); err != nil {
			return "", w.ownErr(err)
		}
		for n := 1; n <= maxSameName; n++ {
			p := resultName(name, n)
			err := w.root.Link(rel, p)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err == nil {
				_ = w.root.Remove(rel)
				return p, nil
			}
			break // no links here: copy it
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("saving %s: %w", name, err)
	}
	defer in.Close()
	f, p, err := w.createResult(name)
	if err != nil {
		return "", err
	}
	_, werr := io.Copy(f, in)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = w.root.Remove(p)
		return "", explain(p, werr)
	}
	_ = os.Remove(src)
	return p, nil
}

// inside returns the workspace-relative path of the OS path p when it is
// inside the workspace.
func (w *Workspace) inside(p string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(w.dir, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// maxSameName is how many files of one name (name, name-2, ...) the
// results directory may hold.
const maxSameName = 10000

// checkResultName refuses a name that is not one file name.
func checkResultName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." {
		return fmt.Errorf("saving a tool result: %q is not a file name", name)
	}
	return nil
}

// resultName is the workspace-relative path of the nth file named name:
// name itself, then name-2.ext, name-3.ext, ...
func resultName(name string, n int) string {
	if n == 1 {
		return ResultsDir + "/" + name
	}
	ext := path.Ext(name)
	return fmt.Sprintf("%s/%s-%d%s", ResultsDir, strings.TrimSuffix(name, ext), n, ext)
}

// createResult creates a new, empty file under ResultsDir named name (or
// name-2.ext, name-3.ext, ... when that is taken) and returns it open for
// writing with its workspace-relative path.
func (w *Workspace) createResult(name string) (*os.File, string, error) {
	if err := checkResultName(name); err != nil {
		return nil, "", err
	}
	if err := makeOwnDir(w.root, w.dir, ResultsDir); err != nil {
		return nil, "", w.ownErr(err)
	}
	for n := 1; n <= maxSameName; n++ {
		p := resultName(name, n)
		f, err := w.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", explain(p, err)
		}
		return f, p, nil
	}
	return nil, "", fmt.Errorf("saving %s: %d files of that name are already in %s", name, maxSameName, ResultsDir)
}

// ownErr is err from making ResultsDir, explained for the model: an
// *OwnLinkError naming its path relative to the root, any other as
// explain says it.
func (w *Workspace) ownErr(err error) error {
	var le *OwnLinkError
	if errors.As(err, &le) {
		c := *le
		if rel, ok := w.inside(c.Path); ok {
			c.Path = rel
		}
		return &c
	}
	return explain(ResultsDir, err)
}

// clip bounds an input echoed in an error message to 200 characters, so
// that a huge input does not make a huge error.
func clip(s string) string {
	s = result.WellFormed(s)
	if len(s) > 200 {
		if cut := cutChars(s, 200); len(cut) < len(s) {
			return cut + "…"
		}
	}
	return s
}

// short is clip, quoted.
func short(s string) string { return strconv.Quote(clip(s)) }
