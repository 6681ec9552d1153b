package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"unicode/utf8"

	"myelin/result"
	"myelin/tool"
)

// GrepInput is the input of workspace--grep.
type GrepInput struct {
	Pattern string `json:"pattern" jsonschema:"RE2 regular expression, matched against each line"`
	Path    string `json:"path,omitempty" jsonschema:"file or directory to search, relative to the workspace root (default: the whole workspace)"`
	Glob    string `json:"glob,omitempty" jsonschema:"only files whose name (or path, when it holds a /) matches this glob, e.g. *.go or src/**/*.ts"`
	Context *int   `json:"context,omitempty" jsonschema:"lines of context before and after each match (default 0)"`
	Limit   *int   `json:"limit,omitempty" jsonschema:"most matching lines to show (default 100)"`
	Skip    *int   `json:"skip,omitempty" jsonschema:"matching lines to skip first, to page through many matches (default 0)"`
}

// GrepReport is the structured content of workspace--grep.
type GrepReport struct {
	Matches []GrepMatch `json:"matches"`
	// Total is how many lines matched in all; Shown how many are listed.
	Total        int `json:"total"`
	Shown        int `json:"shown"`
	Skipped      int `json:"skipped"`
	FilesMatched int `json:"filesMatched"`
	FilesRead    int `json:"filesRead"`
	// Passed over: binary files, files too large, links leading out.
	PassedOver []string `json:"passedOver,omitempty"`
	// Next is the input for the next matches, nil when none are left.
	Next *GrepInput `json:"next"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

const (
	defaultGrepLimit = 100
	maxGrepLine      = 300     // characters of one line shown
	maxGrepSize      = 1 << 30 // files over 1 GiB are passed over
)

func (w *Workspace) grepTool() *tool.Tool {
	return tool.MustFunc("workspace--grep",
		"Search the workspace's text files for an RE2 regular expression.\n"+
			"Output is `path:line:text` per matching line (context lines `path-line-text`, groups split by `--`), "+
			"long lines cut, at most limit matches, with a footer saying what was left out and the call that shows the next ones. "+
			"Directories .git and .myelin are searched only when path points into them; binary files are passed over.",
		func(ctx context.Context, in GrepInput) (any, error) {
			return w.Grep(ctx, in, tool.CapFrom(ctx))
		})
}

// Grep searches files for the pattern, line by line, and returns what fits
// in cap characters.
func (w *Workspace) Grep(ctx context.Context, in GrepInput, cap int) (result.Result, error) {
	if err := checkInts(map[string]*int{"context": in.Context, "skip": in.Skip}, 0); err != nil {
		return result.Result{}, err
	}
	if err := checkInts(map[string]*int{"limit": in.Limit}, 1); err != nil {
		return result.Result{}, err
	}
	if in.Pattern == "" {
		return result.Result{}, fmt.Errorf("pattern is empty; give an RE2 regular expression")
	}
	lineRe, err := regexp.Compile(in.Pattern)
	if err != nil {
		return result.Result{}, fmt.Errorf("invalid regular expression %q: %v", in.Pattern, err)
	}
	// Searching the whole file with (?m) finds candidate lines at the speed
	// of the regexp's literal prefix scan; each candidate line is then
	// matched on its own, so matches never span lines.
	fileRe := regexp.MustCompile("(?m)" + in.Pattern)
	if in.Glob != "" {
		if _, err := matchGlob(in.Glob, "x"); err != nil {
			return result.Result{}, fmt.Errorf("invalid glob %q: %v", in.Glob, err)
		}
	}
	files, passed, err := w.grepFiles(in.Path, in.Glob)
	if err != nil {
		return result.Result{}, err
	}
	g := &grepper{
		lineRe: lineRe, fileRe: fileRe,
		context: intOr(in.Context, 0), limit: intOr(in.Limit, defaultGrepLimit), skip: intOr(in.Skip, 0),
		report: GrepReport{Matches: []GrepMatch{}, PassedOver: passed},
	}
	g.budget = max(200, cap-300-2*utf8.RuneCountInString(in.Pattern+in.Path+in.Glob))
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return result.Result{}, fmt.Errorf("grep was cancelled after %d files: %v", g.report.FilesRead, err)
		}
		_, data, err := w.readFile(f, maxGrepSize)
		if err != nil {
			g.report.PassedOver = append(g.report.PassedOver, fmt.Sprintf("%s (%v)", f, err))
			continue
		}
		if result.LooksBinary(string(data[:min(len(data), 8192)])) {
			g.report.PassedOver = append(g.report.PassedOver, f+" (binary)")
			continue
		}
		g.report.FilesRead++
		g.file(f, data)
	}
	r := &g.report
	r.Skipped = min(g.skip, r.Total)
	if r.Skipped+r.Shown < r.Total {
		next := in
		skip := r.Skipped + r.Shown
		next.Skip = &skip
		r.Next = &next
	}
	return result.Result{Data: g.out.String() + g.footer(in), Structured: r}, nil
}

// grepFiles lists the files to search, sorted, under path and matching glob.
func (w *Workspace) grepFiles(p, glob string) ([]string, []string, error) {
	rel, st, err := w.stat(p)
	if err != nil {
		return nil, nil, err
	}
	if !st.IsDir() {
		return []string{rel}, nil, nil
	}
	var files, passed []string
	err = fs.WalkDir(w.root.FS(), rel, func(fp string, d fs.DirEntry, err error) error {
		if err != nil {
			passed = append(passed, fmt.Sprintf("%s (%v)", fp, explain(fp, err)))
			return nil
		}
		if d.IsDir() {
			if fp != rel && (d.Name() == ".git" || d.Name() == ".myelin") {
				return fs.SkipDir
			}
			return nil
		}
		if glob != "" {
			if ok, _ := matchGlob(glob, fp); !ok {
				return nil
			}
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if st, err := w.root.Stat(fp); err != nil || !st.Mode().IsRegular() {
				return nil // links that lead out, or to directories, are not followed
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		files = append(files, fp)
		return nil
	})
	return files, passed, err
}

type grepper struct {
	lineRe, fileRe *regexp.Regexp
	context        int
	limit, skip    int
	budget         int
	used           int
	full           bool // the output reached its budget
	out            strings.Builder
	lastPath       string
	lastLine       int // last line written for lastPath, for context and `--`
	report         GrepReport
}

// file finds the matching lines of one file.
func (g *grepper) file(path string, data []byte) {
	matched := false
	lineNo, counted := 1, 0 // lineNo is the number of the line at byte counted
	pos := 0
	for pos < len(data) {
		loc := g.fileRe.FindIndex(data[pos:])
		if loc == nil {
			break
		}
		at := pos + loc[0]
		start := bytes.LastIndexByte(data[:at], '\n') + 1
		end := len(data)
		if i := bytes.IndexByte(data[at:], '\n'); i >= 0 {
			end = at + i
		}
		if at == len(data) && start == len(data) {
			break // an empty match after the last line end is no line
		}
		lineNo += bytes.Count(data[counted:start], []byte{'\n'})
		counted = start
		line := bytes.TrimSuffix(data[start:end], []byte{'\r'})
		if g.lineRe.Match(line) {
			matched = true
			g.match(path, data, start, end, lineNo)
		}
		pos = end + 1
	}
	if matched {
		g.report.FilesMatched++
	}
}

// match records one matching line and, while there is room, writes it with
// its context.
func (g *grepper) match(path string, data []byte, start, end, lineNo int) {
	g.report.Total++
	if g.report.Total <= g.skip || g.full || g.report.Shown >= g.limit {
		return
	}
	var b strings.Builder
	if path != g.lastPath {
		g.lastLine = 0
	}
	// context before
	first := max(1, lineNo-g.context)
	if path == g.lastPath {
		first = max(first, g.lastLine+1)
	}
	if g.lastPath != "" && (path != g.lastPath || first > g.lastLine+1) && g.out.Len() > 0 {
		b.WriteString("--\n")
	}
	s := start
	for n := lineNo - 1; n >= first; n-- {
		s = bytes.LastIndexByte(data[:s-1], '\n') + 1
	}
	for n, p := first, s; n < lineNo; n++ {
		e := p + bytes.IndexByte(data[p:], '\n')
		writeLine(&b, path, '-', n, data[p:e])
		p = e + 1
	}
	text := writeLine(&b, path, ':', lineNo, data[start:end])
	// context after
	last := lineNo
	for p := end + 1; last < lineNo+g.context && p < len(data); last++ {
		e := bytes.IndexByte(data[p:], '\n')
		if e < 0 {
			e = len(data) - p
		}
		if g.lineRe.Match(bytes.TrimSuffix(data[p:p+e], []byte{'\r'})) {
			break // the next match writes itself and its own context
		}
		writeLine(&b, path, '-', last+1, data[p:p+e])
		p += e + 1
	}
	n := utf8.RuneCountInString(b.String())
	if g.used+n > g.budget {
		g.full = true
		return
	}
	g.out.WriteString(b.String())
	g.used += n
	g.lastPath, g.lastLine = path, last
	g.report.Shown++
	g.report.Matches = append(g.report.Matches, GrepMatch{Path: path, Line: lineNo, Text: text})
}

// writeLine writes one output line, made well formed and cut to
// maxGrepLine characters, and returns the text it wrote for the line.
func writeLine(b *strings.Builder, path string, sep byte, n int, line []byte) string {
	text := result.WellFormed(string(bytes.TrimSuffix(line, []byte{'\r'})))
	if c := utf8.RuneCountInString(text); c > maxGrepLine {
		text = cutChars(text, maxGrepLine) + fmt.Sprintf("… [line cut: %d more characters]", c-maxGrepLine)
	}
	fmt.Fprintf(b, "%s%c%d%c%s\n", path, sep, n, sep, text)
	return text
}

func (g *grepper) footer(in GrepInput) string {
	r := &g.report
	var b strings.Builder
	switch {
	case r.Total == 0:
		fmt.Fprintf(&b, "[no lines match %q in %d files", in.Pattern, r.FilesRead)
	case r.Shown == 0 && r.Skipped >= r.Total:
		fmt.Fprintf(&b, "[all %d matching lines were skipped (skip %d)", r.Total, g.skip)
	default:
		fmt.Fprintf(&b, "[matching lines %d-%d of %d, in %d of %d files read", r.Skipped+1, r.Skipped+r.Shown, r.Total, r.FilesMatched, r.FilesRead)
	}
	if n := len(r.PassedOver); n > 0 {
		fmt.Fprintf(&b, "; passed over %d files: %s", n, strings.Join(firstN(r.PassedOver, 5), ", "))
		if n > 5 {
			b.WriteString(", …")
		}
	}
	if r.Next != nil {
		why := "the limit"
		if g.full {
			why = "the page size"
		}
		fmt.Fprintf(&b, "; %d more not shown (%s); next: workspace--grep %s", r.Total-r.Skipped-r.Shown, why, callJSON(r.Next))
	}
	b.WriteString("]")
	return b.String()
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
