package result

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// piece is one result's full text and the cap it must fit.
type piece struct {
	text  string
	chars int
	cap   int
	label spillLabel
	sp    *spilled // the spill, once written
	fixed bool     // the round bound cannot shorten it: its floor is not below its length
}

func newPiece(text string, cap int, label spillLabel) piece {
	return piece{text: text, chars: Chars(text), cap: cap, label: label}
}

// shown is how many characters of the piece go into the conversation, at
// most.
func (p *piece) shown() int { return min(p.chars, p.cap) }

// spilled is a text over its cap, written whole to a workspace file (or not,
// and why).
type spilled struct {
	text  string
	chars int
	lines int
	path  string // "" when not kept
	err   error  // why it was not kept
}

// spill writes the whole text to `<label>.txt` under .myelin/tool-results/,
// once: a piece already spilled keeps its file.
func (p *piece) spill(store Store) {
	if p.sp != nil {
		return
	}
	sp := &spilled{text: p.text, chars: p.chars, lines: Lines(p.text)}
	p.sp = sp
	if store == nil {
		sp.err = ErrNoWorkspace
		return
	}
	sp.path, sp.err = store.Save(p.label.String()+".txt", p.text)
	if sp.err != nil {
		sp.path = ""
	}
}

// shortenable reports whether the round bound may cut the piece further:
// its head can lose characters and still keep MinCap of its own text. It is
// asked of the piece about to be cut, which it spills first, so that the
// notice, whose length sets the floor, is known; a piece it says no to is
// marked fixed.
func (p *piece) shortenable(store Store) bool {
	if p.sp == nil {
		// Decided first with the path a workspace would most likely give,
		// so that a piece too short to shorten is not spilled for nothing.
		guess := spilled{text: p.text, chars: p.chars, lines: Lines(p.text), path: ".myelin/tool-results/" + p.label.String() + "-99.txt"}
		if p.shown() <= MinCap+guess.worstNotice()+1 {
			p.fixed = true
			return false
		}
	}
	p.spill(store)
	if p.shown() <= MinCap+p.sp.worstNotice()+1 {
		p.fixed = true
		return false
	}
	return true
}

// floor is the smallest cap the round bound may give a spilled piece: its
// head keeps MinCap characters, with the notice after them.
func (p *piece) floor() int { return MinCap + p.sp.worstNotice() + 1 }

// worstNotice is the length of the notice with the largest numbers it can
// hold, which bounds the real one.
func (sp spilled) worstNotice() int {
	return max(
		utf8.RuneCountInString(sp.notice(sp.chars, sp.lines, sp.lines+1, true, false)),
		utf8.RuneCountInString(sp.notice(sp.chars, sp.lines, sp.lines+1, false, true)))
}

// head is the head of the text followed by its notice, together at most cap
// characters. The head is cut at the last line end before its budget when
// that keeps at least 80% of the budget and at least minHead characters,
// else at the budget (never between a CR and its LF).
func (sp spilled) head(cap, minHead int) string {
	budget := max(0, cap-sp.worstNotice()-1) // -1 for the line end before the notice
	cut, byLine := Head(sp.text, budget, minHead)
	h := sp.text[:cut]
	shownLines := strings.Count(h, "\n")
	partial := !byLine && h != "" && !strings.HasSuffix(h, "\n")
	if partial {
		shownLines++
	}
	sep := ""
	if h != "" && !strings.HasSuffix(h, "\n") {
		sep = "\n"
	}
	return h + sep + sp.notice(utf8.RuneCountInString(h), shownLines, shownLines+1, byLine, partial)
}

// Head is where text is cut to show at most budget characters of it, as
// a byte offset: at the last line end before the budget when that keeps
// at least 80% of the budget and at least minHead characters (byLine),
// else at the budget, never between a CR and its LF. It is the one cut
// of a long text's head: a spilled result's, and a resource read's
// (package mcpserver); it adds no notice.
func Head(text string, budget, minHead int) (cut int, byLine bool) {
	cut = CharOffset(text, budget)
	if nl := strings.LastIndexByte(text[:cut], '\n'); nl >= 0 {
		if n := utf8.RuneCountInString(text[:nl+1]); n*5 >= budget*4 && n >= minHead {
			return nl + 1, true
		}
	}
	if cut > 0 && cut < len(text) && text[cut-1] == '\r' && text[cut] == '\n' {
		cut--
	}
	return cut, false
}

// notice is the one notice after a cut head: what is shown, where the whole
// is, the ready call for the next page and the grep hint; or, when the text
// could not be kept, that and why. The head puts it on a line of its own.
func (sp spilled) notice(shownChars, shownLines, nextLine int, byLine, partial bool) string {
	var b strings.Builder
	b.WriteString("[myelin: this result is ")
	fmt.Fprintf(&b, "%d characters in %d lines; shown above are the first %d characters", sp.chars, sp.lines, shownChars)
	switch {
	case shownLines == 0:
	case partial:
		fmt.Fprintf(&b, ": lines 1-%d, the last in part", shownLines)
	default:
		fmt.Fprintf(&b, ": lines 1-%d", shownLines)
	}
	if sp.path == "" {
		if sp.err == ErrNoWorkspace || sp.err == nil {
			b.WriteString(". The rest was not kept: there is no writable workspace to save it in.]")
		} else {
			fmt.Fprintf(&b, ". The rest was not kept: it could not be written to the workspace (%s).]", stubField(sp.err.Error()))
		}
		return b.String()
	}
	fmt.Fprintf(&b, ". The whole result is in the workspace file %s.\nRead on: workspace--read ", sp.path)
	if byLine {
		b.Write(mustJSON(struct {
			Path   string `json:"path"`
			Offset int    `json:"offset"`
		}{sp.path, nextLine}))
	} else {
		b.Write(mustJSON(struct {
			Path        string `json:"path"`
			OffsetChars int    `json:"offsetChars"`
		}{sp.path, shownChars}))
	}
	b.WriteString("\nSearch it: workspace--grep ")
	b.Write(mustJSON(struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
	}{"REGEX", sp.path}))
	b.WriteString("]")
	return b.String()
}

func mustJSON(v any) []byte {
	raw, err := JSON(v)
	if err != nil {
		panic(err) // only called with plain structs of strings and ints
	}
	return raw
}
