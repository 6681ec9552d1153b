package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/myelin-run/myelin/internal/wholefile"
)

// The files the workspace tools never write, edit or create, because their
// contents decide what runs on the user's machine or what myelin remembers:
//
//   - .mcp.json at the root: the MCP servers myelin starts;
//   - .myelin/ at the root: the conversation store, spill files, logs;
//   - any .git (directory or file) at any depth: its config can make git run
//     a command (core.fsmonitor, hooks) on the user's next `git status`;
//   - any directory git would take for a repository of its own (a bare
//     one), whatever its name: see gitDirWrite.
//
// Names are compared without case, as a case-insensitive file system would.
// Reads stay allowed. The check is on the path a write would really reach:
// symbolic links are followed (inside the workspace) first, and a write
// replaces the file's name with a new file rather than writing through it,
// so a hard link to a protected file is cut off, never written through.

// protected says why the tools may not write rel (a clean path with no
// symbolic link in it), or "" when they may.
func protected(rel string) string {
	parts := strings.Split(rel, "/")
	switch {
	case strings.EqualFold(parts[0], ".myelin"):
		return "it is one of myelin's own files (the conversation store, spill files, logs), which the tools do not change"
	case len(parts) == 1 && strings.EqualFold(parts[0], ".mcp.json"):
		return "it is the workspace's list of MCP servers, which start programs; only the user edits it"
	}
	for _, p := range parts {
		if strings.EqualFold(p, ".git") {
			return "it is part of a git repository's own data (.git), whose config can make git run commands; only the user changes it"
		}
	}
	return ""
}

// maxLinks bounds the symbolic links followed in one path, as the kernel's
// ELOOP does.
const maxLinks = 40

// Resolve returns the workspace-relative path rel really names: every
// symbolic link along it followed, as long as it stays inside ("." for
// the workspace itself). A path that does not exist yet resolves as far
// as it exists, the rest kept as given — the path a tool's write of rel
// would reach. A link that leads outside the workspace, or more than 40
// links, is an error. It is for checking a path by what it names (a
// policy that decides by path); it must not be taken as a promise that
// the path stays so: a link can change after it returns.
func (w *Workspace) Resolve(rel string) (string, error) {
	var done []string
	todo := strings.Split(rel, "/")
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == "." || name == "" {
			continue
		}
		cur := path.Join(path.Join(done...), name)
		st, err := w.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			done = append(append(done, name), todo...)
			break
		}
		if err != nil {
			return "", explain(cur, err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			done = append(done, name)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many symbolic links", clip(rel))
		}
		target, err := w.root.Readlink(cur)
		if err != nil {
			return "", explain(cur, err)
		}
		joined := path.Join(path.Join(done...), target)
		if path.IsAbs(target) || joined == ".." || strings.HasPrefix(joined, "../") {
			return "", fmt.Errorf("%s leads outside the workspace (through a symbolic link); it cannot be used", clip(rel))
		}
		done = nil
		if joined != "." {
			todo = append(strings.Split(joined, "/"), todo...)
		}
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// writable resolves the path a tool is about to write and refuses it when
// it is protected or exists as anything but a regular file. It returns the
// resolved path, whether a file is there, and that file's permissions.
func (w *Workspace) writable(rel string) (real string, exists bool, perm fs.FileMode, err error) {
	real, err = w.Resolve(rel)
	if err != nil {
		return "", false, 0, err
	}
	why := protected(real)
	if why == "" {
		if why, err = w.gitDirWrite(real); err != nil {
			return "", false, 0, err
		}
	}
	if why != "" {
		if real != rel {
			return "", false, 0, fmt.Errorf("%s may not be written: it leads to %s, and %s", clip(rel), clip(real), why)
		}
		return "", false, 0, fmt.Errorf("%s may not be written: %s", clip(rel), why)
	}
	st, err := w.root.Lstat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return real, false, 0o644, nil
	case err != nil:
		return "", false, 0, explain(real, err)
	case st.IsDir():
		return "", false, 0, fmt.Errorf("%s is a directory; the tools write files, never over a directory", clip(rel))
	case !st.Mode().IsRegular():
		return "", false, 0, fmt.Errorf("%s is %s, not a regular file; the tools read and write regular files only", clip(rel), kindOf(st.Mode()))
	}
	// The new content is renamed over the name, which asks only the
	// directory: a file the user made read-only must still refuse, as a
	// write into it would.
	f, err := w.root.OpenFile(real, os.O_WRONLY, 0)
	if err != nil {
		return "", false, 0, explain(real, err)
	}
	_ = f.Close()
	return real, true, st.Mode().Perm(), nil
}

// kindOf names a file that is not a regular file or a directory.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// replace writes data as the whole new content of real (a path from
// writable), through internal/wholefile inside the workspace's root: to a
// new file beside it, renamed over the name, so that a reader never sees
// half a file and a hard link to the old file is left as it was. An
// existing file keeps its permissions; a new one gets perm under the
// umask.
//
// Neither the file nor its directory is synced (wholefile.Unsynced), as
// before wholefile: the model's writes and edits and a rewind's put-backs
// are the world's files, as durable as what a shell command writes there,
// and a rewind that puts back 500 files took 1–4.5 s with two syncs a file
// instead of 0.1–0.2 s. A crash soon after may leave the old content, the
// new, or (on some file systems) an empty file. myelin's own state files
// (permission rules, tokens, trusted servers, AWS caches) are synced.
func (w *Workspace) replace(real string, data []byte, exists bool, perm fs.FileMode) error {
	dir, _ := path.Split(real)
	if dir != "" {
		if err := w.root.MkdirAll(path.Clean(dir), 0o755); err != nil {
			return explain(path.Clean(dir), err)
		}
	}
	mode := wholefile.Created(perm)
	if exists {
		mode = wholefile.Exactly(perm) // the umask must not narrow it
	}
	if err := wholefile.ReplaceIn(w.root, real, data, mode, wholefile.Unsynced); err != nil {
		return explain(real, err)
	}
	return nil
}
