package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// The files under ResultsDir are written by myelin (spill files, saved
// payloads, results cleared from requests) and named in the text of the
// conversation that wrote them. What is here finds those names in a text,
// lists the files, and removes one — for deleting a conversation with its
// files and pruning the files no conversation names (package purge). It
// never follows a symbolic link: ResultsDir and OwnDir must be real
// directories, and a link found in ResultsDir is listed as one and never
// removed or followed.

// resultPrefix is how a text names a file under ResultsDir.
const resultPrefix = ResultsDir + "/"

// ResultPaths returns the workspace-relative paths of the files directly
// under ResultsDir that text names (".myelin/tool-results/NAME"), each
// once, in the order first named. A name is what myelin gives its files:
// letters, digits, '.', '_' and '-', a sentence's final dot not included;
// a name followed by '/' is a directory's, and not returned.
func ResultPaths(text string) []string {
	var out []string
	seen := map[string]bool{}
	for rest := text; ; {
		i := strings.Index(rest, resultPrefix)
		if i < 0 {
			return out
		}
		rest = rest[i+len(resultPrefix):]
		n := 0
		for n < len(rest) && nameByte(rest[n]) {
			n++
		}
		if n < len(rest) && rest[n] == '/' {
			continue // a directory below ResultsDir: not a file of it
		}
		name := strings.TrimRight(rest[:n], ".")
		if name == "" {
			continue
		}
		if p := resultPrefix + name; !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
}

// nameByte reports whether c may be part of a name myelin gives a file
// under ResultsDir.
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// ResultFile is an entry of ResultsDir, as ResultFiles lists it.
type ResultFile struct {
	// Path is workspace-relative: ResultsDir + "/" + its name.
	Path string
	// Size and Modified are its size in bytes and its modification time.
	Size     int64
	Modified time.Time
	// Regular is false for what myelin never writes there (a symbolic
	// link, a directory, a device): never removed by RemoveResult.
	Regular bool
}

// ResultFiles lists the entries directly under ResultsDir, by path, each
// looked at with Lstat (a link is listed as a link, never followed). No
// ResultsDir is no files; OwnDir or ResultsDir being a symbolic link or
// not a directory is an *OwnLinkError, and nothing is listed.
func (w *Workspace) ResultFiles() ([]ResultFile, error) {
	if err := w.checkResultsDir(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	d, err := w.root.Open(ResultsDir)
	if err != nil {
		return nil, explain(ResultsDir, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, explain(ResultsDir, err)
	}
	sort.Strings(names)
	out := make([]ResultFile, 0, len(names))
	for _, name := range names {
		p := resultPrefix + name
		st, err := w.root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, explain(p, err)
		}
		out = append(out, ResultFile{Path: p, Size: st.Size(), Modified: st.ModTime(), Regular: st.Mode().IsRegular()})
	}
	return out, nil
}

// RemoveResult removes the file at p (workspace-relative, directly under
// ResultsDir). It refuses any other path, a p that is not a regular file
// (a symbolic link there is neither followed nor removed), and OwnDir or
// ResultsDir being a link or not a directory (*OwnLinkError). A file
// that is not there is an error wrapping fs.ErrNotExist.
func (w *Workspace) RemoveResult(p string) error {
	rel, err := Rel(p)
	if err != nil {
		return err
	}
	if !isResultFile(rel) {
		return fmt.Errorf("%s is not a file directly under %s: only those are removed", short(p), ResultsDir)
	}
	if err := w.checkResultsDir(); err != nil {
		return err
	}
	if err := checkOwnEntry(w.root, w.dir, rel, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return err
	}
	if err := w.root.Remove(rel); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return explain(rel, err)
	}
	return nil
}

// checkResultsDir checks that OwnDir and ResultsDir are real directories,
// not links; an error wrapping fs.ErrNotExist when one is missing.
func (w *Workspace) checkResultsDir() error {
	for _, d := range []string{OwnDir, ResultsDir} {
		if err := checkOwnEntry(w.root, w.dir, d, true); err != nil {
			return err
		}
	}
	return nil
}

// ResultName is p's file name, for showing a removed file: p itself when
// it is plain, else quoted (as the tools show names).
func ResultName(p string) string { return showName(path.Clean(p)) }
