package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// ReadInput is the input of workspace--read.
type ReadInput struct {
	Path        string `json:"path" jsonschema:"file to read, relative to the workspace root; a name shown quoted by the tools is given quoted the same way"`
	Offset      *int   `json:"offset,omitempty" jsonschema:"first line to show, 1-based (default 1; 1 to the file's last line)"`
	Limit       *int   `json:"limit,omitempty" jsonschema:"most lines to show (default 2000; 1 to 100000, more is taken as 100000; a page also stops where it fills the conversation's room)"`
	OffsetChars *int   `json:"offsetChars,omitempty" jsonschema:"read by character instead: first character, 0-based (0 to the file's last character)"`
	LimitChars  *int   `json:"limitChars,omitempty" jsonschema:"read by character: most characters to show (1 or more; more than fits the conversation's room is taken as what fits)"`
}

// ReadPage is the structured content of workspace--read: what the page
// shows and how to get the next one.
type ReadPage struct {
	Path       string `json:"path" jsonschema:"the file, relative to the workspace root, as the tools show it"`
	Mode       string `json:"mode" jsonschema:"lines (read by line) or chars (by character)"`
	FirstLine  int    `json:"firstLine,omitempty" jsonschema:"by line: the first line shown, 1-based"`
	LastLine   int    `json:"lastLine,omitempty" jsonschema:"by line: the last line shown"`
	TotalLines int    `json:"totalLines" jsonschema:"lines in the file"`
	// OffsetChars and Chars are the character range shown (0-based start),
	// in both modes.
	OffsetChars int  `json:"offsetChars" jsonschema:"the first character shown, 0-based, in both modes"`
	Chars       int  `json:"chars" jsonschema:"characters shown"`
	TotalChars  int  `json:"totalChars" jsonschema:"characters in the file"`
	EOF         bool `json:"eof" jsonschema:"the page reaches the end of the file"`
	// Next is the input of the call for the next page; nil at the end.
	Next *ReadInput `json:"next" jsonschema:"the arguments of the workspace--read call for the next page; null at the end"`
}

const (
	defaultReadLines = 2000
	maxReadLines     = 100000  // a larger limit is taken as this
	maxReadSize      = 1 << 30 // workspace--read reads files of up to 1 GiB
	sniffSize        = 8192    // the first block, which decides whether a file is binary
)

func (w *Workspace) readTool() *tool.Tool {
	return withOutput(readSchema(), tool.MustFunc("workspace--read",
		"Read a text file of the workspace, a page at a time.\n"+
			"By line (offset is 1-based, limit defaults to 2000, at most 100000) the page is `cat -n` style: line number, tab, line. "+
			"For files with very long lines, read by character with offsetChars and limitChars. "+
			"A footer names the range shown, the total, and the exact call for the next page. "+
			"A name shown quoted (\"nl\\nx.txt\") by list, glob or grep is given as path quoted the same way. "+
			"A page always fits in the conversation.",
		func(ctx context.Context, in ReadInput) (any, error) {
			if err := w.fetchMissing(ctx, in.Path); err != nil {
				return nil, err
			}
			return w.Read(in, tool.CapFrom(ctx))
		}))
}

// Read returns one page of a file that fits in cap characters, footer
// included. It reads the file once, a block at a time, in memory bounded
// by the page whatever the file holds: it decides from the first block
// whether the file is binary, keeps only the page, and counts the totals
// for the footer as it goes on to the end.
func (w *Workspace) Read(in ReadInput, cap int) (result.Result, error) {
	lineMode := in.OffsetChars == nil && in.LimitChars == nil
	if !lineMode && (in.Offset != nil || in.Limit != nil) {
		return result.Result{}, fmt.Errorf("give either offset and limit (by line) or offsetChars and limitChars (by character), not both")
	}
	if err := checkInts(1, intField{"offset", in.Offset}, intField{"limit", in.Limit}, intField{"limitChars", in.LimitChars}); err != nil {
		return result.Result{}, err
	}
	if err := checkInts(0, intField{"offsetChars", in.OffsetChars}); err != nil {
		return result.Result{}, err
	}
	rel, err := pathArg(in.Path)
	if err != nil {
		return result.Result{}, err
	}
	f, st, err := w.OpenRegular(rel)
	if err != nil {
		if st, serr := w.root.Stat(rel); serr == nil && st.IsDir() {
			return result.Result{}, fmt.Errorf("%s is a directory, not a file; workspace--list lists it", clip(showName(rel)))
		}
		return result.Result{}, err
	}
	defer f.Close()
	if st.Size() > maxReadSize {
		return result.Result{}, fmt.Errorf("%s is %d bytes, over the %d bytes this tool reads", clip(showName(rel)), st.Size(), int64(maxReadSize))
	}
	head := make([]byte, sniffSize)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return result.Result{}, explain(showName(rel), err)
	}
	if result.LooksBinary(string(head[:n])) {
		return result.Result{}, fmt.Errorf("%s is a binary file (%d bytes), not text; workspace--read reads text files", clip(showName(rel)), st.Size())
	}
	p := &pager{path: showName(rel), cap: cap, size: st.Size(), src: result.NewTextStream(io.MultiReader(bytes.NewReader(head[:n]), f))}
	if lineMode {
		return p.lines(intOr(in.Offset, 1), min(intOr(in.Limit, defaultReadLines), maxReadLines))
	}
	return p.chars(intOr(in.OffsetChars, 0), intOr(in.LimitChars, 0))
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// intField is an optional integer input and its name.
type intField struct {
	name string
	v    *int
}

// checkInts refuses integers below least, naming the first such field.
func checkInts(least int, fields ...intField) error {
	for _, f := range fields {
		if f.v != nil && *f.v < least {
			return fmt.Errorf("%s must be %d or more, got %d", f.name, least, *f.v)
		}
	}
	return nil
}

// pager makes one page of a file it reads once, in order: it consumes the
// text piece by piece and counts the characters and line ends consumed.
type pager struct {
	path string // the file, as the tools show it
	cap  int
	size int64 // the file's size in bytes: a bound on its totals
	src  *result.TextStream
	err  error

	piece    string // the part of the current piece not consumed yet
	consumed int    // characters consumed
	ends     int    // line ends ('\n') consumed
	last     byte   // the last byte consumed; 0 before any

	totalLines, totalChars int
}

// more reports whether any text is left, reading the next piece when the
// current one is consumed.
func (p *pager) more() bool {
	for p.piece == "" && p.err == nil {
		p.piece, p.err = p.src.Next()
	}
	return p.piece != ""
}

// consume takes the first n bytes of the current piece.
func (p *pager) consume(n int) string {
	s := p.piece[:n]
	p.piece = p.piece[n:]
	if n > 0 {
		p.consumed += result.Chars(s)
		p.ends += strings.Count(s, "\n")
		p.last = s[n-1]
	}
	return s
}

// skipLines consumes k lines; it stops early at the end of the text.
func (p *pager) skipLines(k int) {
	for k > 0 && p.more() {
		i := strings.IndexByte(p.piece, '\n')
		if i < 0 {
			p.consume(len(p.piece))
			continue
		}
		p.consume(i + 1)
		k--
	}
}

// skipChars consumes k characters; it stops early at the end of the text.
func (p *pager) skipChars(k int) {
	for k > 0 && p.more() {
		n := result.CharOffset(p.piece, k)
		k -= result.Chars(p.consume(n))
	}
}

// line consumes the next line and returns it without its '\n', or, when
// it is longer than most characters, its first most characters (then
// whole is false and the rest is not consumed).
func (p *pager) line(most int) (text string, whole bool) {
	var b strings.Builder
	have := 0
	for p.more() {
		i := strings.IndexByte(p.piece, '\n')
		seg := p.piece
		if i >= 0 {
			seg = p.piece[:i]
		}
		n := result.Chars(seg)
		if have+n > most {
			b.WriteString(p.consume(result.CharOffset(seg, most-have)))
			return b.String(), false
		}
		have += n
		b.WriteString(p.consume(len(seg)))
		if i >= 0 {
			p.consume(1)
			return b.String(), true
		}
	}
	return b.String(), true
}

// readChars consumes up to k characters and returns them.
func (p *pager) readChars(k int) string {
	var b strings.Builder
	for k > 0 && p.more() {
		s := p.consume(result.CharOffset(p.piece, k))
		k -= result.Chars(s)
		b.WriteString(s)
	}
	return b.String()
}

// finish consumes the rest of the text and sets the totals.
func (p *pager) finish() error {
	for p.more() {
		p.consume(len(p.piece))
	}
	if p.err != io.EOF {
		return fmt.Errorf("reading %s: %w", p.path, p.err)
	}
	p.totalChars, p.totalLines = p.consumed, p.ends
	if p.consumed > 0 && p.last != '\n' {
		p.totalLines++
	}
	return nil
}

// budget is how many characters the page's body may take so that the page
// with its footer fits the cap; footer is the longest footer it can get.
func (p *pager) budget(footer string) int {
	return max(100, p.cap-utf8.RuneCountInString(footer)-1)
}

// worstFooter is the longest footer the page can get. It is known before
// the totals are: they have at most as many digits as the file's size.
func (p *pager) worstFooter() string {
	big := int(min(p.size, maxReadSize))*2 + 2
	p.totalChars, p.totalLines = big, big
	defer func() { p.totalChars, p.totalLines = 0, 0 }()
	return longest(
		p.lineFooter(big, big, big, false),
		p.longLineFooter(big, big, big),
		p.charFooter(big, big, false))
}

// longest is the longest of ss.
func longest(ss ...string) string {
	best := ""
	for _, s := range ss {
		if len(s) > len(best) {
			best = s
		}
	}
	return best
}

func (p *pager) lines(offset, limit int) (result.Result, error) {
	budget := p.budget(p.worstFooter())
	p.skipLines(offset - 1)
	if !p.more() {
		if err := p.finish(); err != nil {
			return result.Result{}, err
		}
		if p.totalChars == 0 {
			return p.page("", p.path+" is empty", ReadPage{Mode: "lines", EOF: true}), nil
		}
		return result.Result{}, fmt.Errorf("offset %d is past the end of %s, which has %d lines", offset, p.path, p.totalLines)
	}
	charStart := p.consumed
	var b strings.Builder
	used, end, ln := 0, charStart, offset
	full := false // a line did not fit: the page ends before it
	for ; ln-offset < limit && p.more(); ln++ {
		line, whole := p.line(budget + 2)
		if whole {
			line = strings.TrimSuffix(line, "\r")
		}
		entry := fmt.Sprintf("%6d\t%s\n", ln, line)
		n := utf8.RuneCountInString(entry)
		if !whole || used+n > budget {
			if ln == offset {
				if err := p.finish(); err != nil {
					return result.Result{}, err
				}
				return p.longLine(ln, line, charStart, budget), nil
			}
			full = true
			break
		}
		b.WriteString(entry)
		used += n
		end = p.consumed
	}
	eof := !full && !p.more()
	if err := p.finish(); err != nil {
		return result.Result{}, err
	}
	last := ln - 1
	info := ReadPage{Mode: "lines", FirstLine: offset, LastLine: last, OffsetChars: charStart, Chars: end - charStart, EOF: eof}
	if !eof {
		if ln <= offset { // a next page must move on; this cannot happen, and must not loop a model forever
			return result.Result{}, fmt.Errorf("workspace--read: the page of %s from line %d holds no line", p.path, offset)
		}
		info.Next = &ReadInput{Path: p.path, Offset: &ln}
	}
	return p.page(b.String(), p.lineFooter(offset, last, ln, eof), info), nil
}

// longLine is the page for a line too long for one: its first part, and the
// call that reads on by character.
func (p *pager) longLine(ln int, line string, charStart, budget int) result.Result {
	prefix := fmt.Sprintf("%6d\t", ln)
	keep := max(1, budget-len(prefix)-1)
	cut := cutChars(line, keep)
	shown := utf8.RuneCountInString(cut)
	next := charStart + shown
	info := ReadPage{Mode: "lines", FirstLine: ln, LastLine: ln, OffsetChars: charStart, Chars: shown,
		Next: &ReadInput{Path: p.path, OffsetChars: &next}}
	return p.page(prefix+cut+"\n", p.longLineFooter(ln, shown, next), info)
}

func (p *pager) chars(offset, limit int) (result.Result, error) {
	budget := p.budget(p.worstFooter())
	if limit == 0 || limit > budget {
		limit = budget
	}
	p.skipChars(offset)
	body := p.readChars(limit)
	eof := !p.more()
	// never end a page between a CR and its LF
	if strings.HasSuffix(body, "\r") && len(body) > 1 && !eof && p.piece[0] == '\n' {
		body = body[:len(body)-1]
	}
	if err := p.finish(); err != nil {
		return result.Result{}, err
	}
	if offset > p.totalChars || (offset == p.totalChars && p.totalChars > 0) {
		return result.Result{}, fmt.Errorf("offsetChars %d is past the end of %s, which has %d characters", offset, p.path, p.totalChars)
	}
	n := utf8.RuneCountInString(body)
	next := offset + n
	eof = next >= p.totalChars
	info := ReadPage{Mode: "chars", OffsetChars: offset, Chars: n, EOF: eof}
	if !eof {
		info.Next = &ReadInput{Path: p.path, OffsetChars: &next}
	}
	sep := ""
	if body != "" && !strings.HasSuffix(body, "\n") {
		sep = "\n"
	}
	return p.page(body+sep, p.charFooter(offset, next, eof), info), nil
}

func (p *pager) page(body, footer string, info ReadPage) result.Result {
	info.Path, info.TotalLines, info.TotalChars = p.path, p.totalLines, p.totalChars
	return result.Result{Data: body + "[" + footer + "]", Structured: info}
}

func (p *pager) lineFooter(first, last, next int, eof bool) string {
	s := fmt.Sprintf("lines %d-%d of %d in %s", first, last, p.totalLines, p.path)
	if eof {
		return s + "; end of file"
	}
	return s + "; next page: workspace--read " + callJSON(ReadInput{Path: p.path, Offset: &next})
}

func (p *pager) longLineFooter(ln, shown, next int) string {
	return fmt.Sprintf("line %d of %d in %s is longer than a page; shown are its first %d characters; read on: workspace--read %s",
		ln, p.totalLines, p.path, shown, callJSON(ReadInput{Path: p.path, OffsetChars: &next}))
}

func (p *pager) charFooter(offset, next int, eof bool) string {
	s := fmt.Sprintf("characters %d-%d of %d in %s", offset+1, next, p.totalChars, p.path)
	if eof {
		return s + "; end of file"
	}
	return s + "; next page: workspace--read " + callJSON(ReadInput{Path: p.path, OffsetChars: &next})
}

// callJSON is a tool input as compact JSON, for the ready calls in footers.
func callJSON(v any) string {
	raw, err := result.JSON(v) // as the spill notice writes its ready call: <, >, & as themselves
	if err != nil {
		return "{}"
	}
	return string(raw)
}

// cutChars is the first n characters of s.
func cutChars(s string, n int) string {
	return s[:result.CharOffset(s, n)]
}
