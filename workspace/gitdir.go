package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"
)

// A directory of any name is a git repository of its own — a bare one,
// whose `config` git reads — when it holds a HEAD file beside `objects`
// and `refs` (git's is_git_directory); a `commondir` file can point those
// two anywhere else. git run in it or below it (the user's next `git
// status`, or a prompt that shows the branch) then obeys that config:
// core.pager, core.fsmonitor, core.sshCommand, aliases, hooks (issue 26
// §5). Protecting `.git` alone left that open: `sub/HEAD`, `sub/config`,
// `sub/objects/x` and `sub/refs/heads/x` were all written.
//
// Decision: the tools refuse the shape, not the settings. A list of the
// config keys that run commands is open-ended (and grows with git); a
// directory with a HEAD beside objects, refs or commondir is not a thing a
// project needs the model to make. So a write is refused when any
// directory along its path holds, once the write is done, a HEAD and one
// of objects, refs or commondir: the write would make that directory look
// like a git repository, or goes inside one that already does (a bare
// repository the user keeps in the workspace: its config and hooks are as
// protected as .git's). One of the two alone (HEAD, or refs) stays
// writable. Existing entries are looked up by their exact names, as git
// does (a case-insensitive file system finds "head" for HEAD by itself);
// the name the write adds is compared without case.
//
// Not protected, on purpose: .gitattributes and .gitmodules. Attributes
// only name filter and diff drivers, which run only when a git config
// defines them; git refuses a command (`update = !cmd`) from .gitmodules.

// gitMarks are the entries that, beside a HEAD, make a directory a git
// directory for git.
var gitMarks = []string{"objects", "refs", "commondir"}

// gitDirWrite says why writing the file real (a resolved, clean path)
// would make a directory along it a git directory or writes inside one,
// or "" when it would not.
func (w *Workspace) gitDirWrite(real string) (string, error) {
	parts := strings.Split(real, "/")
	for i, added := range parts { // added: the entry the write makes (or goes through) in dir
		dir := path.Join(parts[:i]...) // "" is the root
		head := strings.EqualFold(added, "HEAD")
		if !head {
			var err error
			if head, err = w.hasEntry(dir, "HEAD"); err != nil {
				return "", err
			}
		}
		if !head {
			continue
		}
		mark := ""
		for _, m := range gitMarks {
			if strings.EqualFold(added, m) {
				mark = added
			}
		}
		for _, m := range gitMarks {
			if mark != "" {
				break
			}
			has, err := w.hasEntry(dir, m)
			if err != nil {
				return "", err
			}
			if has {
				mark = m
			}
		}
		if mark == "" {
			continue
		}
		shown := dir
		if shown == "" {
			shown = "the workspace root"
		}
		return fmt.Sprintf("%s would hold a HEAD beside %s, which makes git take it for a repository (a bare one) and obey its config when git runs there (core.pager, core.fsmonitor and other settings run commands); only the user makes git repositories", clip(shown), mark), nil
	}
	return "", nil
}

// hasEntry reports whether dir (relative, "" for the root) holds name, of
// any kind (a symbolic link counts: git follows it).
func (w *Workspace) hasEntry(dir, name string) (bool, error) {
	p := path.Join(dir, name)
	_, err := w.root.Lstat(p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return false, nil // dir is not there yet (the write makes it), or is a file
	}
	return false, explain(p, err)
}
