package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// GrepInput is the input of workspace--grep.
type GrepInput struct {
	Pattern string `json:"pattern" jsonschema:"RE2 regular expression, matched against each line"`
	Path    string `json:"path,omitempty" jsonschema:"file or directory to search, relative to the workspace root (default: the whole workspace); a name shown quoted is given quoted the same way"`
	Glob    string `json:"glob,omitempty" jsonschema:"only files whose name (or path, when it holds a /) matches this glob, e.g. *.go or src/**/*.ts"`
	Context *int   `json:"context,omitempty" jsonschema:"lines of context before and after each match (default 0; 0 to 20, more is taken as 20)"`
	Limit   *int   `json:"limit,omitempty" jsonschema:"most matching lines to show (default 100; 1 to 10000, more is taken as 10000)"`
	Skip    *int   `json:"skip,omitempty" jsonschema:"matching lines to skip first, to page through many matches (default 0; 0 or more)"`
}

// GrepReport is the structured content of workspace--grep.
type GrepReport struct {
	// Matches are the matching lines shown, in order.
	Matches []GrepMatch `json:"matches" jsonschema:"the matching lines shown, in order"`
	// Total is how many lines matched in all; Shown how many are listed.
	Total        int `json:"total" jsonschema:"how many lines matched in all"`
	Shown        int `json:"shown" jsonschema:"how many matching lines are shown"`
	Skipped      int `json:"skipped" jsonschema:"matching lines skipped (the input's skip)"`
	FilesMatched int `json:"filesMatched" jsonschema:"files with at least one matching line"`
	FilesRead    int `json:"filesRead" jsonschema:"text files searched"`
	// Passed over: binary files, named pipes, sockets and devices (never
	// opened), links leading out, files that could not be read; each with
	// why.
	PassedOver []string `json:"passedOver,omitempty" jsonschema:"files passed over (binary files, named pipes, sockets, devices, links leading out, files that could not be read), each with why"`
	// LongLines counts the lines longer than 1 MiB, which were searched in
	// their first MiB only (the rest was read past); LongLineAt names the
	// first 100 of them.
	LongLines  int         `json:"longLines,omitempty" jsonschema:"lines longer than 1 MiB, searched in their first MiB only"`
	LongLineAt []GrepPlace `json:"longLineAt,omitempty" jsonschema:"the first 100 of those long lines"`
	// NotSearched are the directories .git and .myelin met on the way
	// down and not searched; a call whose path points into one searches it.
	NotSearched []string `json:"notSearched,omitempty" jsonschema:"the directories .git and .myelin met on the way and not searched; a call whose path points into one searches it"`
	// Next is the input for the next matches, nil when none are left.
	Next *GrepInput `json:"next" jsonschema:"the arguments of the workspace--grep call for the next matches; null when none are left"`
}

// GrepPlace is a line of a file.
type GrepPlace struct {
	Path string `json:"path" jsonschema:"the file, as the tools show it (quoted when it must be)"`
	Line int    `json:"line" jsonschema:"the line number, 1-based"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string `json:"path" jsonschema:"the file, relative to the workspace root, as the tools show it (quoted when it must be)"`
	Line int    `json:"line" jsonschema:"the line number, 1-based"`
	Text string `json:"text" jsonschema:"the line, well formed and cut as shown"`
}

const (
	defaultGrepLimit = 100
	maxGrepLimit     = 10000 // a larger limit is taken as this
	maxGrepContext   = 20    // a larger context is taken as this
	maxGrepLine      = 300   // characters of one line shown
	maxLongLineAt    = 100   // long lines named in the structured content
)

func (w *Workspace) grepTool() *tool.Tool {
	return withOutput(grepSchema(), tool.MustFunc("workspace--grep",
		"Search the workspace's text files for an RE2 regular expression.\n"+
			"Output is `path:line:text` per matching line (with context, context lines `path-line-text` and groups split by `--`), "+
			"long lines cut, at most limit matches, with a footer saying what was left out and the call that shows the next ones. "+
			"Directories .git and .myelin (myelin's spill files and logs) are searched only when path points into them, and the footer names those left out; binary files, named pipes and devices are passed over; a line longer than 1 MiB is searched in its first MiB only. "+
			"A name shown quoted (\"nl\\nx.txt\") is given as path quoted the same way.",
		func(ctx context.Context, in GrepInput) (any, error) {
			return w.Grep(ctx, in, tool.CapFrom(ctx))
		}))
}

// Grep searches files for the pattern, line by line, and returns what fits
// in cap characters.
func (w *Workspace) Grep(ctx context.Context, in GrepInput, cap int) (result.Result, error) {
	if err := checkInts(0, intField{"context", in.Context}, intField{"skip", in.Skip}); err != nil {
		return result.Result{}, err
	}
	if err := checkInts(1, intField{"limit", in.Limit}); err != nil {
		return result.Result{}, err
	}
	if in.Pattern == "" {
		return result.Result{}, fmt.Errorf("pattern is empty; give an RE2 regular expression")
	}
	lineRe, err := regexp.Compile(in.Pattern)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return result.Result{}, fmt.Errorf("invalid regular expression %s: %s: %s", short(in.Pattern), se.Code, short(se.Expr))
		}
		return result.Result{}, fmt.Errorf("invalid regular expression %s: %w", short(in.Pattern), err)
	}
	if in.Glob != "" {
		if _, err := matchGlob(in.Glob, "x"); err != nil {
			return result.Result{}, fmt.Errorf("invalid glob %s: %w", short(in.Glob), err)
		}
	}
	if err := w.fetchMissing(ctx, in.Path); err != nil {
		return result.Result{}, err
	}
	files, passed, notSearched, err := w.grepFiles(in.Path, in.Glob)
	if err != nil {
		return result.Result{}, err
	}
	parsed, err := syntax.Parse(in.Pattern, syntax.Perl) // it compiled: it parses
	if err != nil {
		return result.Result{}, fmt.Errorf("invalid regular expression %s: %w", short(in.Pattern), err)
	}
	// Numbers above their range are taken as its top, and the next call
	// says so.
	if in.Limit != nil && *in.Limit > maxGrepLimit {
		in.Limit = ptr(maxGrepLimit)
	}
	if in.Context != nil && *in.Context > maxGrepContext {
		in.Context = ptr(maxGrepContext)
	}
	dfa, err := newLineDFA(parsed)
	if err != nil {
		return result.Result{}, fmt.Errorf("invalid regular expression %s: %w", short(in.Pattern), err)
	}
	g := &grepper{
		lineRe: lineRe, dfa: dfa,
		context: intOr(in.Context, 0), limit: intOr(in.Limit, defaultGrepLimit), skip: intOr(in.Skip, 0),
		report: GrepReport{Matches: []GrepMatch{}, PassedOver: passed, NotSearched: notSearched},
	}
	g.literal, g.fold = requiredLiteral(parsed)
	if g.literal != nil {
		g.finder = newLiteralFinder(g.literal, g.fold)
	}
	// The footer is at most its fixed words, two passed-over names, the
	// long-lines note with one name, the directories not searched and the
	// next call; the matches get the rest of the cap.
	worst := in
	big := min(1<<40, math.MaxInt) // the widest a number is on this platform, up to 1<<40
	worst.Skip, worst.Limit, worst.Context = &big, &big, &big
	g.budget = max(100, cap-250-3*maxFooterName-longLinesNoteSize-utf8.RuneCountInString(callJSON(worst))-utf8.RuneCountInString(notSearchedNote(notSearched)))
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return result.Result{}, fmt.Errorf("grep was cancelled after %d files: %w", g.report.FilesRead, err)
		}
		if err := w.grepFile(g, f); err != nil {
			g.report.PassedOver = append(g.report.PassedOver, fmt.Sprintf("%s (%v)", showName(f), err))
		}
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

// grepFiles lists the files to search, sorted, under path and matching
// glob; the files passed over; and the .git and .myelin directories below
// path, which are not searched. It opens nothing but directories: a named
// pipe, a socket or a device is passed over (or, given as path, refused)
// on what lstat and stat say of it.
func (w *Workspace) grepFiles(p, glob string) (files, passed, notSearched []string, err error) {
	rel, st, err := w.statArg(p)
	if err != nil {
		return nil, nil, nil, err
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return nil, nil, nil, notRegular(rel, st.Mode())
		}
		return []string{rel}, nil, nil, nil
	}
	err = w.walk(rel, func(fp string, d fs.DirEntry, err error) error {
		if err != nil {
			passed = append(passed, fmt.Sprintf("%s (%v)", showName(fp), err))
			return nil
		}
		if d.IsDir() {
			if fp != rel && (d.Name() == ".git" || d.Name() == ".myelin") {
				notSearched = append(notSearched, showName(fp))
				return fs.SkipDir
			}
			return nil
		}
		if glob != "" {
			if ok, _ := matchGlob(glob, fp); !ok {
				return nil
			}
		}
		mode := d.Type()
		if mode&fs.ModeSymlink != 0 {
			st, err := w.root.Stat(fp)
			switch {
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				passed = append(passed, fmt.Sprintf("%s (a symbolic link that cannot be followed: %v)", showName(fp), explain(showName(fp), err)))
				return nil
			case err != nil || st.IsDir():
				return nil // a dangling link, or one to a directory: not followed
			}
			mode = st.Mode()
		}
		if !mode.IsRegular() {
			passed = append(passed, fmt.Sprintf("%s (%s, not opened)", showName(fp), kindOf(mode)))
			return nil
		}
		files = append(files, fp)
		return nil
	})
	return files, passed, notSearched, err
}

// grepFile opens one regular file and searches it.
func (w *Workspace) grepFile(g *grepper, p string) error {
	f, _, err := w.OpenRegular(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := g.file(showName(p), f); err != nil {
		return err
	}
	g.report.FilesRead++
	return nil
}

func ptr(n int) *int { return &n }

type grepper struct {
	lineRe        *regexp.Regexp // the pattern, for the lines dfa gives up on
	dfa           *lineDFA       // the pattern, line by line
	literal       []byte         // a literal every match holds, or nil (see requiredLiteral)
	fold          bool           // literal is matched ASCII-case-insensitively
	finder        *literalFinder // finds literal; nil when it is folded and all letters
	lowered       []byte         // the region being searched, ASCII letters lowered (fold without finder)
	regionLit     bool           // the literal finds the candidates in the region being searched
	regionLowered bool           // ... looked for in lowered with bytes.Index
	context       int
	limit, skip   int
	budget        int
	used          int
	full          bool // the output reached its budget
	out           strings.Builder
	report        GrepReport
	buf           []byte       // the read buffer, reused from file to file
	cutHere       map[int]bool // the lines of this file cut at grepLineMax

	path     string // the file being searched
	rbase    int    // line number of the first line of the region being searched
	lastPath string // the file of the last line written
	lastLine int    // the last line written of lastPath, for context and `--`
	after    int    // context lines still owed after the last match shown
}

// grepChunk is how much of a file is read at a time. A variable so that
// tests can cross chunk boundaries.
var grepChunk = 1 << 20

// grepLineMax is the most bytes of one line that grep keeps and searches: a
// longer line is searched in its first grepLineMax bytes (cut at a
// character's start), the rest is read past, and the line is reported. So
// the read buffer never holds more than the context lines and one line of
// at most grepLineMax bytes, whatever the file holds. A variable so that
// tests can use a small one.
var grepLineMax = 1 << 20

// file searches one file, reading it a chunk at a time. Each chunk's
// complete lines are searched as one region; the last `context` lines and
// the unfinished line are carried into the next chunk, so that context
// before a match is at hand. Whether the file is binary is decided from its
// first chunk, before any line is looked for.
func (g *grepper) file(path string, r io.Reader) error {
	g.path, g.after = path, 0
	clear(g.cutHere)
	if len(g.buf) == 0 {
		g.buf = make([]byte, grepChunk)
	}
	matchedBefore := g.report.Total
	n, base, fresh := 0, 1, 0 // bytes in buf, line number of buf[0], bytes already searched
	eof, sniffed := false, false
	for {
		for !eof && n < len(g.buf) {
			m, err := r.Read(g.buf[n:])
			n += m
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return err
			}
		}
		if !sniffed {
			sniffed = true
			if result.LooksBinary(string(g.buf[:min(n, sniffSize)])) {
				return errBinary
			}
		}
		// the last line, not ended yet, starts at unfinished
		unfinished := bytes.LastIndexByte(g.buf[fresh:n], '\n') + 1 + fresh
		// a grown buffer may hold whole lines over the bound
		if unfinished-fresh > grepLineMax {
			n, unfinished = g.cutLongLines(fresh, unfinished, n, base)
		}
		if n-unfinished > grepLineMax {
			var err error
			if n, eof, err = g.cutLine(r, unfinished, n, eof, base+bytes.Count(g.buf[:unfinished], []byte{'\n'})); err != nil {
				return err
			}
			continue
		}
		end := n
		if !eof {
			if unfinished == fresh { // no line ends in what was read: room for the longest line kept
				g.buf = append(g.buf, make([]byte, fresh+grepLineMax+1-len(g.buf))...)
				continue
			}
			end = unfinished
		}
		g.region(g.buf[:end], base, fresh)
		if eof {
			break
		}
		keep := end
		for k := 0; k < g.context && keep > 0; k++ {
			keep = bytes.LastIndexByte(g.buf[:keep-1], '\n') + 1
		}
		base += bytes.Count(g.buf[:keep], []byte{'\n'})
		n = copy(g.buf, g.buf[keep:n])
		fresh = end - keep
	}
	if g.report.Total > matchedBefore {
		g.report.FilesMatched++
	}
	return nil
}

// cutLongLines cuts, as cutLine does, every line of g.buf[fresh:end]
// longer than grepLineMax, moving what follows it (up to n) back. base is
// the number of g.buf[0]'s line. It returns the new n and end.
func (g *grepper) cutLongLines(fresh, end, n, base int) (int, int) {
	lineNo := base + bytes.Count(g.buf[:fresh], []byte{'\n'})
	for s := fresh; s < end; lineNo++ {
		e := lineEnd(g.buf[:end], s)
		if e-s > grepLineMax {
			k := g.keep(s, lineNo)
			shift := copy(g.buf[s+k:], g.buf[e:n])
			n, end, e = s+k+shift, end-(e-s-k), s+k
		}
		s = e + 1
	}
	return n, end
}

// keep is how many bytes of the long line at g.buf[start:] are kept: at
// most grepLineMax, never half a character. It records the cut.
func (g *grepper) keep(start, lineNo int) int {
	k := grepLineMax
	for back := 0; back < 3 && k > 0 && g.buf[start+k]&0xC0 == 0x80; back++ {
		k--
	}
	g.report.LongLines++
	if len(g.report.LongLineAt) < maxLongLineAt {
		g.report.LongLineAt = append(g.report.LongLineAt, GrepPlace{Path: g.path, Line: lineNo})
	}
	if g.cutHere == nil {
		g.cutHere = map[int]bool{}
	}
	g.cutHere[lineNo] = true
	return k
}

// cutLine keeps the first grepLineMax bytes of the line that starts at
// g.buf[start:] (backed off to a character's start), ends them with a
// '\n', and reads past the rest of the line, keeping what follows it. It
// returns the bytes now in the buffer and whether the file is read to its
// end.
func (g *grepper) cutLine(r io.Reader, start, n int, eof bool, lineNo int) (int, bool, error) {
	cut := start + g.keep(start, lineNo)
	g.buf[cut] = '\n' // g.buf[start:n] holds no line end: the rest of the line is still to read
	n = cut + 1
	if eof {
		return n, eof, nil
	}
	if len(g.buf)-n < 64<<10 {
		g.buf = append(g.buf, make([]byte, 64<<10)...)
	}
	for {
		m, err := r.Read(g.buf[n:])
		if i := bytes.IndexByte(g.buf[n:n+m], '\n'); i >= 0 {
			return n + copy(g.buf[n:], g.buf[n+i+1:n+m]), err == io.EOF, nil
		}
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return 0, false, err
		}
	}
}

var errBinary = errors.New("binary")

// region searches complete lines; r[:fresh] was searched with the chunk
// before and is there for context only. base is the number of r's first
// line.
func (g *grepper) region(r []byte, base, fresh int) {
	g.rbase = base
	// A folded literal misses the Kelvin sign and the long s, which fold
	// to k and s: a region holding one is matched line by line.
	g.regionLit = g.literal != nil && !(g.fold && hasNonASCIIFold(r[fresh:], g.literal))
	g.regionLowered = g.regionLit && g.finder == nil
	if g.regionLowered {
		g.lowered = lowerASCII(g.lowered[:0], r)
	}
	if !g.regionLit {
		g.everyLine(r, base+bytes.Count(r[:fresh], []byte{'\n'}), fresh)
		return
	}
	lineNo, counted := base, 0 // lineNo is the number of the line at byte counted
	pos := fresh
	for pos < len(r) {
		if g.after > 0 {
			end := lineEnd(r, pos)
			lineNo += bytes.Count(r[counted:pos], []byte{'\n'})
			counted = pos
			g.line(r, pos, end, lineNo)
			pos = end + 1
			continue
		}
		at := g.candidate(r, pos)
		if at < 0 {
			return
		}
		start := bytes.LastIndexByte(r[:at], '\n') + 1
		end := lineEnd(r, at)
		lineNo += bytes.Count(r[counted:start], []byte{'\n'})
		counted = start
		if g.matches(r[start:end]) {
			g.match(r, start, end, lineNo)
		}
		pos = end + 1
	}
}

// everyLine matches every line of r from pos on, lineNo being the number
// of the line at pos: for a pattern without a literal to look for first.
func (g *grepper) everyLine(r []byte, lineNo, pos int) {
	for ; pos < len(r); lineNo++ {
		end := lineEnd(r, pos)
		g.line(r, pos, end, lineNo)
		pos = end + 1
	}
}

// line matches the line r[start:end], number lineNo, and records it as a
// match or, when one is owed, as context after a match.
func (g *grepper) line(r []byte, start, end, lineNo int) {
	switch {
	case g.matches(r[start:end]):
		g.match(r, start, end, lineNo)
	case g.after > 0:
		g.afterLine(r[start:end], lineNo)
	}
}

// matches reports whether the pattern matches the line, its CR set aside.
func (g *grepper) matches(line []byte) bool {
	line = trimCR(line)
	if m, ok := g.dfa.match(line); ok {
		return m
	}
	return g.lineRe.Match(line)
}

// candidate is the offset of the next place at or after pos where the
// literal every match holds is, or -1: found by its rarest byte
// (literalFinder), or, for a folded literal all letters, with bytes.Index
// in the lowered region.
func (g *grepper) candidate(r []byte, pos int) int {
	var i int
	if g.regionLowered {
		i = bytes.Index(g.lowered[pos:], g.literal)
	} else {
		i = g.finder.index(r[pos:])
	}
	if i < 0 {
		return -1
	}
	return pos + i
}

// requiredLiteral is the longest literal that every match of the pattern holds,
// when there is one of at least minLiteral bytes and it cannot span lines: then
// searching for it finds every line that can match, much faster than the
// regular expression can when the pattern does not start with a literal.
// When some of it is case-insensitive (`(?i)error`) and its only letters
// with a case are ASCII, it is returned lowered with fold set, to be
// compared with text whose ASCII letters are lowered; with no letter that
// has a case (`(?i)ログ`), as it is, without fold.
func requiredLiteral(re *syntax.Regexp) (lit []byte, fold bool) {
	l := longestLiteral(re.Simplify())
	if len(l.text) < minLiteral || strings.ContainsAny(l.text, "\n\r") {
		return nil, false
	}
	if l.fold {
		letters := false
		for _, r := range l.text {
			switch {
			case r >= utf8.RuneSelf && unicode.SimpleFold(r) != r:
				return nil, false // a case beyond ASCII (ü, Σ): not looked for
			case r < utf8.RuneSelf && isASCIILetter(byte(r)):
				letters = true
			}
		}
		if !letters { // nothing to fold (`(?i)ログ`): an exact literal
			return []byte(l.text), false
		}
		return lowerASCII(nil, []byte(l.text)), true
	}
	return []byte(l.text), false
}

// literal is a run of characters every match holds; fold when some of
// them match either case.
type literal struct {
	text string
	fold bool
}

func longestLiteral(re *syntax.Regexp) literal {
	switch re.Op {
	case syntax.OpLiteral:
		return literal{string(re.Rune), re.Flags&syntax.FoldCase != 0}
	case syntax.OpCapture, syntax.OpPlus:
		return longestLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return longestLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		var best literal
		for _, sub := range re.Sub {
			if l := longestLiteral(sub); len(l.text) > len(best.text) {
				best = l
			}
		}
		return best
	}
	return literal{}
}

// lowerASCII appends b with its ASCII letters lowered: the same length, so
// that offsets in it are offsets in b.
func lowerASCII(dst, b []byte) []byte {
	dst = append(dst, b...)
	for i, c := range dst {
		if c >= 'A' && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
	}
	return dst
}

// hasNonASCIIFold reports whether r holds one of the two characters that
// fold to an ASCII letter of lit (the Kelvin sign to k, the long s to s),
// which an ASCII-lowered search would miss.
func hasNonASCIIFold(r, lit []byte) bool {
	return bytes.IndexByte(lit, 'k') >= 0 && bytes.Contains(r, []byte("\u212a")) ||
		bytes.IndexByte(lit, 's') >= 0 && bytes.Contains(r, []byte("\u017f"))
}

func lineEnd(r []byte, from int) int {
	if i := bytes.IndexByte(r[from:], '\n'); i >= 0 {
		return from + i
	}
	return len(r)
}

func trimCR(line []byte) []byte {
	if len(line) > 0 && line[len(line)-1] == '\r' {
		return line[:len(line)-1]
	}
	return line
}

// showing reports whether another line may still be written.
func (g *grepper) showing() bool { return !g.full && g.report.Shown < g.limit }

// match records one matching line and, while there is room, writes it with
// the context before it; the context after it comes as region reads on.
func (g *grepper) match(r []byte, start, end, lineNo int) {
	g.report.Total++
	g.after = 0
	if g.report.Total <= g.skip || !g.showing() {
		return
	}
	sameFile := g.lastPath == g.path
	first := max(1, lineNo-g.context, g.rbase)
	if sameFile {
		first = max(first, g.lastLine+1)
	}
	var b strings.Builder
	if g.context > 0 && g.out.Len() > 0 && (!sameFile || first > g.lastLine+1) {
		b.WriteString("--\n")
	}
	s := start
	for n := lineNo - 1; n >= first; n-- {
		s = bytes.LastIndexByte(r[:s-1], '\n') + 1
	}
	for n, p := first, s; n < lineNo; n++ {
		e := lineEnd(r, p)
		g.writeLine(&b, '-', n, r[p:e], maxGrepLine)
		p = e + 1
	}
	text := g.writeLine(&b, ':', lineNo, r[start:end], maxGrepLine)
	if !g.fits(b.String()) {
		if g.report.Shown > 0 {
			return
		}
		// The first line of a page is shown whatever the room: alone, cut
		// shorter, and over the budget if it must, so that the next call
		// always moves on.
		b.Reset()
		room := g.budget - g.used - utf8.RuneCountInString(g.path) - 60
		text = g.writeLine(&b, ':', lineNo, r[start:end], max(20, min(room, maxGrepLine)))
		g.out.WriteString(b.String())
		g.used += utf8.RuneCountInString(b.String())
		g.full = true
	}
	g.lastPath, g.lastLine, g.after = g.path, lineNo, g.context
	g.report.Shown++
	g.report.Matches = append(g.report.Matches, GrepMatch{Path: g.path, Line: lineNo, Text: text})
}

// afterLine writes a line of context after a match.
func (g *grepper) afterLine(line []byte, lineNo int) {
	g.after--
	var b strings.Builder
	g.writeLine(&b, '-', lineNo, line, maxGrepLine)
	if g.fits(b.String()) {
		g.lastLine = lineNo
	} else {
		g.after = 0
	}
}

// fits writes s when it fits the output's budget, and otherwise marks the
// output full.
func (g *grepper) fits(s string) bool {
	if g.full {
		return false
	}
	n := utf8.RuneCountInString(s)
	if g.used+n > g.budget {
		g.full = true
		return false
	}
	g.out.WriteString(s)
	g.used += n
	return true
}

// writeLine writes line n of the file being searched, made well formed and
// cut to most characters, and returns the text it wrote for the line.
func (g *grepper) writeLine(b *strings.Builder, sep byte, n int, line []byte, most int) string {
	text := result.WellFormed(string(bytes.TrimSuffix(line, []byte{'\r'})))
	switch c := utf8.RuneCountInString(text); {
	case g.cutHere[n]:
		text = cutChars(text, most) + fmt.Sprintf("… [line cut: longer than %s; only its first %s was searched]", sizeText(grepLineMax), sizeText(grepLineMax))
	case c > most:
		text = cutChars(text, most) + fmt.Sprintf("… [line cut: %d more characters]", c-most)
	}
	fmt.Fprintf(b, "%s%c%d%c%s\n", g.path, sep, n, sep, text)
	return text
}

func (g *grepper) footer(in GrepInput) string {
	r := &g.report
	var b strings.Builder
	switch {
	case r.Total == 0:
		fmt.Fprintf(&b, "[no lines match in %d files read", r.FilesRead)
	case r.Shown == 0 && r.Skipped >= r.Total:
		fmt.Fprintf(&b, "[all %d matching lines were skipped (skip %d)", r.Total, g.skip)
	default:
		fmt.Fprintf(&b, "[matching lines %d-%d of %d, in %d of %d files read", r.Skipped+1, r.Skipped+r.Shown, r.Total, r.FilesMatched, r.FilesRead)
	}
	if n := len(r.PassedOver); n > 0 {
		names := firstN(r.PassedOver, 2)
		for i, name := range names {
			if utf8.RuneCountInString(name) > maxFooterName {
				names[i] = cutChars(name, maxFooterName-1) + "…"
			}
		}
		fmt.Fprintf(&b, "; passed over %d files: %s", n, strings.Join(names, ", "))
		if n > 2 {
			b.WriteString(", … (the structured content lists them all)")
		}
	}
	if r.LongLines > 0 {
		at := r.LongLineAt[0]
		name := at.Path
		if utf8.RuneCountInString(name) > maxFooterName {
			name = cutChars(name, maxFooterName-1) + "…"
		}
		fmt.Fprintf(&b, "; %d lines longer than %s were searched in their first %s only (the first: %s:%d)", r.LongLines, sizeText(grepLineMax), sizeText(grepLineMax), name, at.Line)
	}
	b.WriteString(notSearchedNote(r.NotSearched))
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

// notSearchedNote is the footer's part that names the directories not
// searched (.git, .myelin) and says how to search one; "" when none was
// met. It names at most two, each cut to maxFooterName characters.
func notSearchedNote(dirs []string) string {
	if len(dirs) == 0 {
		return ""
	}
	names := firstN(dirs, 2)
	for i, name := range names {
		if utf8.RuneCountInString(name) > maxFooterName {
			names[i] = cutChars(name, maxFooterName-1) + "…"
		}
		names[i] += "/"
	}
	list := strings.Join(names, ", ")
	how := "give one as path to search it"
	if utf8.RuneCountInString(dirs[0]) <= maxFooterName {
		how += fmt.Sprintf(", e.g. \"path\":%s", strconv.Quote(dirs[0]))
	}
	if len(dirs) > 2 {
		list += fmt.Sprintf(" and %d more", len(dirs)-2)
		how += "; the structured content lists them all"
	}
	return fmt.Sprintf("; not searched: %s (%s)", list, how)
}

// sizeText is a size in bytes as the footer writes it.
func sizeText(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// maxFooterName bounds each passed-over file named in the footer.
const maxFooterName = 80

// longLinesNoteSize bounds the footer's note on long lines, its file name
// aside.
const longLinesNoteSize = 120

func firstN(s []string, n int) []string {
	return slices.Clone(s[:min(n, len(s))])
}

// minLiteral is the shortest literal grep looks for before matching: found
// by its rarest byte, even two bytes skip most lines when they are rare,
// and cost little more than matching every line when they are not.
const minLiteral = 2
