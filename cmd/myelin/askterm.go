package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
)

// termAsker puts the calls the policy asks about to the person at the
// terminal (approval.Asker): one question at a time on stderr, the answer
// a line of the terminal's input. It shares the MCP UI's screen: the
// spinner waits while a question is up, and an elicitation and an
// approval are never on the screen at once.
type termAsker struct {
	ui *mcpUI
	// userFile is where an "always" answer's rule is written (said in the
	// question; approval.Gate writes it).
	userFile string
}

// newTermAsker is the asker of run and chat: nil when no person is at the
// terminal (stdin or stderr not one), and then a call that would be asked
// is denied, saying what would allow it.
func newTermAsker(ui *mcpUI) approval.Asker {
	if ui == nil || ui.input == nil {
		return nil
	}
	file, err := userRulesFile()
	if err != nil {
		file = "your permissions file (" + err.Error() + ")"
	}
	return &termAsker{ui: ui, userFile: file}
}

// Ask shows the call and reads the answer: y once, s for the session, a
// always, n no (then a reason, sent to the model). It returns ctx's cause
// when ctx ends first (Ctrl-C ends the turn), and approval.ErrNoOne when
// the input ends before an answer.
func (a *termAsker) Ask(ctx context.Context, r approval.Request) (approval.Answer, error) {
	u := a.ui
	defer u.takeTerminal()()
	if err := context.Cause(ctx); err != nil {
		return approval.Answer{}, err
	}
	ans, err := a.ask(ctx, r)
	switch {
	case errors.Is(err, errNoAnswer):
		fmt.Fprintln(u.out, "\nmyelin: no answer: the input ended, so the call is not run")
		return approval.Answer{}, approval.ErrNoOne
	case err != nil:
		fmt.Fprintln(u.out)
		return approval.Answer{}, err
	}
	return ans, nil
}

func (a *termAsker) ask(ctx context.Context, r approval.Request) (approval.Answer, error) {
	out := a.ui.out
	writeQuestion(out, r, a.userFile)
	choices := "[y/s/a/n]"
	if r.Rule == "" {
		choices = "[y/n]"
	}
	for {
		fmt.Fprintf(out, "Allow it? %s ", choices)
		line, err := a.ui.input.next(ctx)
		if err != nil {
			return approval.Answer{}, err
		}
		var c approval.Choice
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			c = approval.AllowOnce
		case "s", "session":
			c = approval.AllowSession
		case "a", "always":
			c = approval.AllowAlways
		case "n", "no":
			fmt.Fprint(out, "Why not? (the model is told; Enter for no reason) ")
			reason, err := a.ui.input.next(ctx)
			if err != nil {
				return approval.Answer{}, err
			}
			return approval.Answer{Choice: approval.Deny, Reason: strings.TrimSpace(reason), By: "terminal"}, nil
		}
		if c == "" || (r.Rule == "" && c != approval.AllowOnce) {
			fmt.Fprintf(out, "  answer one of %s\n", choices)
			continue
		}
		return approval.Answer{Choice: c, By: "terminal"}, nil
	}
}

// maxShown bounds how much of a call's input a question shows: lines, and
// characters of them.
const (
	maxShownLines = 40
	maxShownChars = 4000
	maxLineChars  = 500
)

// writeQuestion writes what a person is asked about r: the tool, its input
// (for shell--run the command line, and the command of it that asked), why,
// and the answers. What the model wrote is shown with its control
// characters escaped: it cannot draw on the terminal or pass off text as
// myelin's.
func writeQuestion(w io.Writer, r approval.Request, userFile string) {
	fmt.Fprintf(w, "\nThe model asks to run %s:\n", approval.Visible(r.Tool))
	if r.Tool == permission.ShellTool && r.Command != "" {
		writeShown(w, r.Command)
		if r.Part != "" && r.Part != r.Command {
			fmt.Fprintf(w, "  asked about: %s\n", approval.Visible(r.Part))
		}
	} else {
		writeShown(w, inputText(r.Input))
	}
	if r.Reason != "" {
		fmt.Fprintf(w, "  why: %s\n", approval.Printable(r.Reason))
	}
	fmt.Fprintln(w, "  y  yes, this once")
	if r.Rule != "" {
		rules := ruleList(r.Rule)
		verb := "allows"
		if strings.Contains(rules, " and ") {
			verb = "allow"
		}
		fmt.Fprintf(w, "  s  yes, and for the rest of this session all that %s %s\n", rules, verb)
		fmt.Fprintf(w, "  a  always: add %s to %s\n", rules, userFile)
	}
	fmt.Fprintln(w, "  n  no (then say why, if you like: the model is told)")
}

// ruleList is a Request's Rule as a person reads it: each rule quoted
// (the gate joins several, one for each command that asked, with "; ").
func ruleList(rule string) string {
	rules := strings.Split(rule, "; ")
	for i, r := range rules {
		rules[i] = strconv.Quote(r)
	}
	if n := len(rules); n > 1 {
		return strings.Join(rules[:n-1], ", ") + " and " + rules[n-1]
	}
	return rules[0]
}

// writeShown writes text indented, at most maxShownLines lines and
// maxShownChars characters of it, saying how much more there is; each
// line as approval.VisibleLines shows it (a line break being one, the
// characters \n are shown as they are), a line over maxLineChars cut
// there, saying how much of it is not shown (so that one long line does
// not take the place of the lines after it: the other fields of a call).
func writeShown(w io.Writer, text string) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	chars := 0
	for i, l := range lines {
		cut := ""
		if r := []rune(l); len(r) > maxLineChars {
			l, cut = string(r[:maxLineChars]), fmt.Sprintf(" … and %s more on this line, not shown", plural(len(r)-maxLineChars, "character", "characters"))
		}
		if i == maxShownLines || chars+len(l) > maxShownChars {
			rest := strings.Join(lines[i:], "\n")
			fmt.Fprintf(w, "    … and %s more, not shown (%s)\n", plural(len(lines)-i, "line", "lines"), plural(len(rest), "character", "characters"))
			return
		}
		chars += len(l)
		fmt.Fprintf(w, "    %s%s\n", approval.VisibleLines(l), cut)
	}
}

// fieldName is an input's field name as its line shows it: as it is
// when it is a plain name (letters, digits, "_", "-", "."), else quoted
// as JSON, so that a name cannot hold a line break, a ": " or spaces
// that pass for another field or a value's line.
func fieldName(n string) string {
	plain := n != ""
	for _, r := range n {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-.", r) {
			plain = false
		}
	}
	if plain {
		return n
	}
	b, _ := json.Marshal(n)
	return string(b)
}

// inputText is a call's input as a person reads it: each field of an
// object on its own line, a string field's text as it is (the code of a
// script, the content of a file, on lines of their own when it has
// several), other values as JSON.
func inputText(in json.RawMessage) string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(in, &fields); err != nil || len(fields) == 0 {
		return strings.TrimSpace(string(in))
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	// the fields of one line first, then those of several, each of
	// their lines indented under its name: a value's lines cannot pass
	// for a field ("path: notes.txt" inside a file's content), nor push
	// a field past the lines shown
	var one, several strings.Builder
	for _, n := range names {
		var s string
		if json.Unmarshal(fields[n], &s) != nil {
			var c bytes.Buffer
			if json.Compact(&c, fields[n]) != nil {
				c.Reset()
				c.Write(fields[n])
			}
			s = c.String()
		}
		name := fieldName(n)
		if strings.Contains(s, "\n") {
			fmt.Fprintf(&several, "%s:\n  %s\n", name, strings.ReplaceAll(s, "\n", "\n  ")) // a last line break too
		} else {
			fmt.Fprintf(&one, "%s: %s\n", name, s)
		}
	}
	return one.String() + several.String()
}
