package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// ListInput is the input of workspace--list.
type ListInput struct {
	Path string `json:"path,omitempty" jsonschema:"directory to list, relative to the workspace root (default: the root); a name shown quoted is given quoted the same way"`
}

// Entry is one directory entry in workspace--list's structured content.
type Entry struct {
	// Name is the entry's name in its directory as the tools show it and
	// take it back: quoted (it then starts with a double quote) when it is
	// not plain, see names.go.
	Name string `json:"name" jsonschema:"the entry's name in its directory, quoted (starting with a double quote) when it is not plain text; the tools take it back as it is"`
	Type string `json:"type" jsonschema:"file, dir, link or other"`
	Size int64  `json:"size" jsonschema:"its size in bytes, for a file; 0 for the others"`
	Kind string `json:"kind,omitempty" jsonschema:"what an other is: a named pipe (FIFO), a socket, a device"`
}

// The structured content of workspace--list, --glob, --write and --edit.
// Their fields are in the order of their JSON names: the content was a
// map, whose keys encode sorted, and its bytes stay what they were.

// ListReport is the structured content of workspace--list.
type ListReport struct {
	Entries []Entry `json:"entries" jsonschema:"the entries, sorted by name; at most 1000"`
	Path    string  `json:"path" jsonschema:"the directory listed, relative to the workspace root"`
}

// GlobReport is the structured content of workspace--glob.
type GlobReport struct {
	Paths []string `json:"paths" jsonschema:"the matching paths, sorted; at most 1000"`
	Total int      `json:"total" jsonschema:"how many paths matched in all"`
}

// WriteReport is the structured content of workspace--write.
type WriteReport struct {
	Bytes   int    `json:"bytes" jsonschema:"the content's length in bytes"`
	Chars   int    `json:"chars" jsonschema:"the content's length in characters"`
	Created bool   `json:"created" jsonschema:"the file is new (false: an existing file was replaced)"`
	Lines   int    `json:"lines" jsonschema:"the content's lines"`
	Path    string `json:"path" jsonschema:"the file written, relative to the workspace root"`
}

// EditReport is the structured content of workspace--edit.
type EditReport struct {
	Path         string `json:"path" jsonschema:"the file edited, relative to the workspace root"`
	Replacements int    `json:"replacements" jsonschema:"how many occurrences were replaced"`
}

// GlobInput is the input of workspace--glob.
type GlobInput struct {
	Pattern string `json:"pattern" jsonschema:"glob over workspace paths: * ? [..] within a name, ** across directories, e.g. **/*.go"`
}

// WriteInput is the input of workspace--write.
type WriteInput struct {
	Path    string `json:"path" jsonschema:"file to write, relative to the workspace root; missing directories are made"`
	Content string `json:"content" jsonschema:"the file's whole new content"`
}

// EditInput is the input of workspace--edit.
type EditInput struct {
	Path       string `json:"path" jsonschema:"file to edit, relative to the workspace root"`
	OldString  string `json:"old_string" jsonschema:"exact text to replace; must occur once unless replace_all is set"`
	NewString  string `json:"new_string" jsonschema:"text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence (default false)"`
}

const maxListed = 1000

func (w *Workspace) listTool() *tool.Tool {
	return withOutput(listSchema(), tool.MustFunc("workspace--list",
		"List a directory of the workspace.\nOne entry per line, sorted: directories end in /, files show their size in bytes, links show their target, named pipes, sockets and devices what they are. "+
			"A name that is not plain text (a newline, a tab, a byte that is not UTF-8) is shown as a quoted string (\"nl\\nx.txt\"), which the tools take back as a path or part of one.",
		func(ctx context.Context, in ListInput) (any, error) { return w.List(in) }))
}

// List lists one directory. It opens nothing but the directory.
func (w *Workspace) List(in ListInput) (result.Result, error) {
	rel, st, err := w.statArg(in.Path)
	if err != nil {
		return result.Result{}, err
	}
	switch {
	case st.Mode().IsRegular():
		return result.Result{}, fmt.Errorf("%s is a file, not a directory; workspace--read reads it", clip(showName(rel)))
	case !st.IsDir():
		return result.Result{}, notRegular(rel, st.Mode())
	}
	entries, err := w.readDir(rel)
	if err != nil {
		return result.Result{}, err
	}
	var b strings.Builder
	list := []Entry{}
	for i, e := range entries {
		if i == maxListed {
			fmt.Fprintf(&b, "[%d more entries not shown; list a subdirectory or use workspace--glob]\n", len(entries)-maxListed)
			break
		}
		name := showName(e.Name())
		full := path.Join(rel, e.Name())
		ent := Entry{Name: name, Type: "other"}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, _ := w.root.Readlink(full)
			ent.Type = "link"
			fmt.Fprintf(&b, "%s -> %s\n", name, showName(target))
		case e.IsDir():
			ent.Type = "dir"
			fmt.Fprintf(&b, "%s/\n", name)
		case e.Type().IsRegular():
			if info, err := e.Info(); err == nil {
				ent.Size = info.Size()
			}
			ent.Type = "file"
			fmt.Fprintf(&b, "%s\t%d bytes\n", name, ent.Size)
		default:
			ent.Kind = kindOf(e.Type())
			fmt.Fprintf(&b, "%s\t%s\n", name, ent.Kind)
		}
		list = append(list, ent)
	}
	if len(entries) == 0 {
		fmt.Fprintf(&b, "[%s is empty]", showName(rel))
	}
	return result.Result{Data: strings.TrimSuffix(b.String(), "\n"), Structured: ListReport{Path: showName(rel), Entries: list}}, nil
}

func (w *Workspace) globTool() *tool.Tool {
	return withOutput(globSchema(), tool.MustFunc("workspace--glob",
		"Find workspace files whose path matches a glob.\nOne path per line, sorted; ** matches across directories (**/*.go). At most 1000 paths. "+
			"A path that is not plain text (a newline, a tab, a byte that is not UTF-8) is shown as a quoted string (\"nl\\nx.txt\"), which the tools take back as a path.",
		func(ctx context.Context, in GlobInput) (any, error) { return w.Glob(in) }))
}

// Glob lists the files whose workspace-relative path matches the pattern.
func (w *Workspace) Glob(in GlobInput) (result.Result, error) {
	if in.Pattern == "" {
		return result.Result{}, fmt.Errorf("pattern is empty; give a glob such as **/*.go")
	}
	if _, err := Rel(in.Pattern); err != nil {
		return result.Result{}, err
	}
	if _, err := matchGlob(in.Pattern, "x"); err != nil {
		return result.Result{}, fmt.Errorf("invalid glob %s: %w", short(in.Pattern), err)
	}
	base := globBase(in.Pattern)
	if _, _, err := w.stat(base); err != nil {
		return result.Result{Data: fmt.Sprintf("[no paths match %s]", in.Pattern), Structured: GlobReport{Paths: []string{}}}, nil
	}
	matches := []string{}
	total := 0
	_ = w.walk(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".myelin") && !strings.HasPrefix(in.Pattern, p) {
			return fs.SkipDir
		}
		if ok, _ := matchPath(in.Pattern, p); ok {
			total++
			if len(matches) < maxListed {
				matches = append(matches, showName(p))
			}
		}
		return nil
	})
	text := strings.Join(matches, "\n")
	switch {
	case total == 0:
		text = fmt.Sprintf("[no paths match %s]", in.Pattern)
	case total > len(matches):
		text += fmt.Sprintf("\n[%d of %d paths shown; narrow the pattern to see the rest]", len(matches), total)
	}
	return result.Result{Data: text, Structured: GlobReport{Paths: matches, Total: total}}, nil
}

// globBase is the directory part of a pattern before its first wildcard.
func globBase(pattern string) string {
	parts := strings.Split(pattern, "/")
	i := 0
	for ; i < len(parts)-1; i++ {
		if strings.ContainsAny(parts[i], "*?[\\") {
			break
		}
	}
	if i == 0 {
		return "."
	}
	return strings.Join(parts[:i], "/")
}

// matchPath matches a slash-separated path against a glob in which `**`, as
// a whole segment, matches any number of segments; other segments follow
// path.Match.
func matchPath(glob, p string) (bool, error) {
	return matchSegments(strings.Split(glob, "/"), strings.Split(p, "/"))
}

// matchGlob is grep's file filter: a glob without a slash matches the
// path's last name (*.go matches every Go file), one with a slash the whole
// path, as matchPath.
func matchGlob(glob, p string) (bool, error) {
	if !strings.Contains(glob, "/") {
		return path.Match(glob, path.Base(p))
	}
	return matchPath(glob, p)
}

func matchSegments(g, p []string) (bool, error) {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(p); i++ {
				if ok, err := matchSegments(g[1:], p[i:]); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		}
		if len(p) == 0 {
			return false, nil
		}
		ok, err := path.Match(g[0], p[0])
		if !ok || err != nil {
			return false, err
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0, nil
}

func (w *Workspace) writeTool() *tool.Tool {
	return withOutput(writeSchema(), tool.MustFunc("workspace--write",
		"Write a whole file in the workspace, making missing directories.\nAn existing file is replaced; a directory is never written over.",
		func(ctx context.Context, in WriteInput) (any, error) { return w.WriteContext(ctx, in) }))
}

// Write writes a whole file, telling no Journal: WriteContext with a
// context that carries none.
func (w *Workspace) Write(in WriteInput) (result.Result, error) {
	return w.WriteContext(context.Background(), in)
}

// WriteContext writes a whole file. When ctx carries a Journal
// (WithJournal), it is told the change first, with the content replaced
// when that is at most MaxJournaled bytes, and its error leaves the file
// as it was; without one, the old content is not read.
func (w *Workspace) WriteContext(ctx context.Context, in WriteInput) (result.Result, error) {
	rel, err := pathArg(in.Path)
	if err != nil {
		return result.Result{}, err
	}
	if rel == "." {
		return result.Result{}, fmt.Errorf("path is empty; give the file to write")
	}
	real, exists, perm, err := w.writable(rel)
	if err != nil {
		return result.Result{}, err
	}
	defer w.changing.lock(real)()
	if real, exists, perm, err = w.writable(rel); err != nil { // as it is now the file is this call's
		return result.Result{}, err
	}
	data := []byte(in.Content)
	if j := journalOf(ctx); j != nil {
		c := Change{Path: real, Existed: exists, After: data}
		if exists {
			if c.Before, c.BeforeKept, err = w.readJournaled(real); err != nil {
				return result.Result{}, notKept(real, err)
			}
		}
		if err := j(ctx, c); err != nil {
			return result.Result{}, notKept(real, err)
		}
	}
	if err := w.replace(real, data, exists, perm); err != nil {
		return result.Result{}, err
	}
	created := !exists
	chars, lines := result.Chars(result.WellFormed(in.Content)), result.Lines(in.Content)
	verb := "replaced"
	if created {
		verb = "created"
	}
	return result.Result{
		Data:       fmt.Sprintf("%s %s: %d characters, %d lines", verb, showName(rel), chars, lines),
		Structured: WriteReport{Path: rel, Created: created, Chars: chars, Lines: lines, Bytes: len(in.Content)},
	}, nil
}

func (w *Workspace) editTool() *tool.Tool {
	return withOutput(editSchema(), tool.MustFunc("workspace--edit",
		"Replace exact text in a workspace file.\nold_string must occur exactly once, or set replace_all to replace every occurrence.",
		func(ctx context.Context, in EditInput) (any, error) { return w.EditContext(ctx, in) }))
}

// Edit replaces old_string with new_string in a file, telling no
// Journal: EditContext with a context that carries none.
func (w *Workspace) Edit(in EditInput) (result.Result, error) {
	return w.EditContext(context.Background(), in)
}

// EditContext replaces old_string with new_string in a file. When ctx
// carries a Journal (WithJournal), it is told the change first, with the
// content replaced when that is at most MaxJournaled bytes, and its error
// leaves the file as it was.
func (w *Workspace) EditContext(ctx context.Context, in EditInput) (result.Result, error) {
	if in.OldString == "" {
		return result.Result{}, fmt.Errorf("old_string is empty; give the exact text to replace (workspace--write writes a whole file)")
	}
	if in.OldString == in.NewString {
		return result.Result{}, fmt.Errorf("old_string and new_string are the same; nothing would change")
	}
	rel, err := pathArg(in.Path)
	if err != nil {
		return result.Result{}, err
	}
	real, exists, perm, err := w.writable(rel)
	if err != nil {
		return result.Result{}, err
	}
	defer w.changing.lock(real)()
	if real, exists, perm, err = w.writable(rel); err != nil { // as it is now the file is this call's
		return result.Result{}, err
	}
	if !exists {
		return result.Result{}, fmt.Errorf("%s does not exist in the workspace; workspace--write creates a file", clip(rel))
	}
	_, data, err := w.readFile(real, maxReadSize)
	if err != nil {
		return result.Result{}, err
	}
	if result.LooksBinary(string(data[:min(len(data), 8192)])) {
		return result.Result{}, fmt.Errorf("%s is a binary file; workspace--edit edits text", rel)
	}
	text := string(data)
	n := strings.Count(text, in.OldString)
	switch {
	case n == 0:
		return result.Result{}, fmt.Errorf("old_string was not found in %s; it must match the file exactly, white space included", rel)
	case n > 1 && !in.ReplaceAll:
		return result.Result{}, fmt.Errorf("old_string occurs %d times in %s; add surrounding text to make it unique, or set replace_all", n, rel)
	}
	after := []byte(strings.ReplaceAll(text, in.OldString, in.NewString))
	if j := journalOf(ctx); j != nil {
		c := Change{Path: real, Existed: true, After: after}
		if len(data) <= MaxJournaled {
			c.Before, c.BeforeKept = data, true
		}
		if err := j(ctx, c); err != nil {
			return result.Result{}, notKept(real, err)
		}
	}
	if err := w.replace(real, after, exists, perm); err != nil {
		return result.Result{}, err
	}
	return result.Result{
		Data:       fmt.Sprintf("replaced %d occurrence(s) in %s", n, showName(rel)),
		Structured: EditReport{Path: rel, Replacements: n},
	}, nil
}

// Tools returns the workspace tools, bound to this workspace. The ones
// that only read (read, grep, list, glob) are read-only
// (tool.Tool.ReadOnly: the permission policy allows them by default, and
// a round runs them side by side) and may run again (tool.Tool.Rerun): a
// second run changes nothing. write and edit are neither.
//
// Each gives structured content on success, which its OutputSchema
// describes (schemas.go).
func (w *Workspace) Tools() []*tool.Tool {
	readers := []*tool.Tool{w.readTool(), w.grepTool(), w.listTool(), w.globTool()}
	for _, t := range readers {
		t.Rerun, t.ReadOnly = true, true
	}
	return append(readers, w.writeTool(), w.editTool())
}
