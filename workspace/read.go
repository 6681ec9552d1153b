package workspace

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// ReadInput is the input of workspace--read.
type ReadInput struct {
	Path        string `json:"path" jsonschema:"file to read, relative to the workspace root"`
	Offset      *int   `json:"offset,omitempty" jsonschema:"first line to show, 1-based (default 1)"`
	Limit       *int   `json:"limit,omitempty" jsonschema:"most lines to show (default 2000)"`
	OffsetChars *int   `json:"offsetChars,omitempty" jsonschema:"read by character instead: first character, 0-based"`
	LimitChars  *int   `json:"limitChars,omitempty" jsonschema:"read by character: most characters to show"`
}

// ReadPage is the structured content of workspace--read: what the page
// shows and how to get the next one.
type ReadPage struct {
	Path       string `json:"path"`                // the file, relative to the workspace root
	Mode       string `json:"mode"`                // "lines" or "chars"
	FirstLine  int    `json:"firstLine,omitempty"` // the first line shown, by line
	LastLine   int    `json:"lastLine,omitempty"`  // the last line shown, by line
	TotalLines int    `json:"totalLines"`          // lines in the file
	// OffsetChars and Chars are the character range shown (0-based start),
	// in both modes.
	OffsetChars int  `json:"offsetChars"`
	Chars       int  `json:"chars"`
	TotalChars  int  `json:"totalChars"` // characters in the file
	EOF         bool `json:"eof"`        // the page reaches the end of the file
	// Next is the input of the call for the next page; nil at the end.
	Next *ReadInput `json:"next"`
}

const (
	defaultReadLines = 2000
	maxReadSize      = 1 << 30 // workspace--read reads files of up to 1 GiB
)

func (w *Workspace) readTool() *tool.Tool {
	return tool.MustFunc("workspace--read",
		"Read a text file of the workspace, a page at a time.\n"+
			"By line (offset is 1-based, limit defaults to 2000) the page is `cat -n` style: line number, tab, line. "+
			"For files with very long lines, read by character with offsetChars and limitChars. "+
			"A footer names the range shown, the total, and the exact call for the next page. "+
			"A page always fits in the conversation.",
		func(ctx context.Context, in ReadInput) (any, error) {
			return w.Read(in, tool.CapFrom(ctx))
		})
}

// Read returns one page of a file that fits in cap characters, footer
// included.
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
	rel, data, err := w.readFile(in.Path, maxReadSize)
	if err != nil {
		return result.Result{}, err
	}
	if result.LooksBinary(string(data[:min(len(data), 8192)])) {
		return result.Result{}, fmt.Errorf("%s is a binary file (%d bytes), not text; workspace--read reads text files", rel, len(data))
	}
	p := &pager{path: rel, text: result.WellFormed(string(data)), cap: cap}
	p.totalLines = result.Lines(p.text)
	p.totalChars = result.Chars(p.text)
	if lineMode {
		return p.lines(intOr(in.Offset, 1), intOr(in.Limit, defaultReadLines))
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

type pager struct {
	path       string
	text       string
	cap        int
	totalLines int
	totalChars int
}

// budget is how many characters the page's body may take so that the page
// with its footer fits the cap; footer is the longest footer it can get.
func (p *pager) budget(footer string) int {
	return max(100, p.cap-utf8.RuneCountInString(footer)-1)
}

func (p *pager) worstFooter() string {
	big := p.totalChars + p.totalLines + 1
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
	if p.text == "" {
		return p.page("", p.path+" is empty", ReadPage{Mode: "lines", EOF: true}), nil
	}
	if offset > p.totalLines {
		return result.Result{}, fmt.Errorf("offset %d is past the end of %s, which has %d lines", offset, p.path, p.totalLines)
	}
	limit = min(limit, p.totalLines) // offset+limit must not overflow: a page never holds more lines than the file
	start := 0
	for ln := 1; ln < offset; ln++ {
		start += strings.IndexByte(p.text[start:], '\n') + 1
	}
	charStart := result.Chars(p.text[:start])
	budget := p.budget(p.worstFooter())

	var b strings.Builder
	used, pos, ln := 0, start, offset
	for ; ln < offset+limit && pos < len(p.text); ln++ {
		end := strings.IndexByte(p.text[pos:], '\n')
		next := pos + end + 1
		if end < 0 {
			end, next = len(p.text)-pos, len(p.text)
		}
		line := strings.TrimSuffix(p.text[pos:pos+end], "\r")
		entry := fmt.Sprintf("%6d\t%s\n", ln, line)
		n := utf8.RuneCountInString(entry)
		if used+n > budget {
			if ln == offset {
				return p.longLine(ln, line, charStart, budget), nil
			}
			break
		}
		b.WriteString(entry)
		used += n
		pos = next
	}
	last := ln - 1
	eof := pos >= len(p.text)
	info := ReadPage{Mode: "lines", FirstLine: offset, LastLine: last, OffsetChars: charStart,
		Chars: result.Chars(p.text[start:pos]), EOF: eof}
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
	if offset > p.totalChars || (offset == p.totalChars && p.totalChars > 0) {
		return result.Result{}, fmt.Errorf("offsetChars %d is past the end of %s, which has %d characters", offset, p.path, p.totalChars)
	}
	budget := p.budget(p.worstFooter())
	if limit == 0 || limit > budget {
		limit = budget
	}
	start := result.CharOffset(p.text, offset)
	body := cutChars(p.text[start:], limit)
	// never end a page between a CR and its LF
	if end := start + len(body); strings.HasSuffix(body, "\r") && end < len(p.text) && p.text[end] == '\n' && len(body) > 1 {
		body = body[:len(body)-1]
	}
	n := utf8.RuneCountInString(body)
	eof := start+len(body) >= len(p.text)
	info := ReadPage{Mode: "chars", OffsetChars: offset, Chars: n, EOF: eof}
	next := offset + n
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
