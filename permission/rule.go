package permission

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Rule is one allow, ask or deny rule, as written:
//
//	workspace--*                 a tool, by a glob on its name
//	github--*[readOnlyHint]      MCP tools whose annotations say so
//	*[destructiveHint]           (readOnlyHint, destructiveHint)
//	shell--run(go test *)        shell--run, by the command it runs
//	go test *                    the same: words alone name a command
//	git status                   that command exactly, no more words
//
// A command pattern is matched word by word against each command a
// command line runs (after quotes are taken off); a word of the pattern
// may be a glob (`*.go`), and a last `*` stands for any words, none
// included. A rule that allows a command allows whatever that command can
// do with the words it matched: `git *` allows `git -c core.pager=…`.
type Rule struct {
	Decision Decision
	// Tool is a glob (path.Match) on tool names.
	Tool string
	// Hint, when set, is the annotation a tool must have:
	// "readOnlyHint" or "destructiveHint".
	Hint string
	// Command, for shell--run, are the patterns of a command's words; nil
	// matches any command.
	Command []string
	// Text is the rule as written; Source where it was written (a file
	// and its line, a flag).
	Text, Source string
	// workspace marks a rule of the workspace's file: it may not allow.
	workspace bool
}

// ParseRule reads text as a rule of decision d, written at source.
func ParseRule(text string, d Decision, source string) (Rule, error) {
	r := Rule{Decision: d, Text: text, Source: source}
	t := strings.TrimSpace(text)
	if t == "" {
		return r, errors.New("an empty rule: give a tool name (workspace--write, github--*) or a command (go test *)")
	}
	switch open := strings.IndexByte(t, '('); {
	case open > 0 && strings.HasSuffix(t, ")"):
		r.Tool = t[:open]
		words := strings.Fields(t[open+1 : len(t)-1])
		if len(words) == 0 {
			return r, fmt.Errorf("%q names no command between its parentheses", text)
		}
		r.Command = words
	case strings.ContainsAny(t, " \t") || !looksLikeTool(t):
		r.Tool, r.Command = ShellTool, strings.Fields(t)
	default:
		r.Tool = t
		if i := strings.IndexByte(t, '['); i >= 0 && strings.HasSuffix(t, "]") {
			r.Tool, r.Hint = t[:i], t[i+1:len(t)-1]
			if r.Hint != "readOnlyHint" && r.Hint != "destructiveHint" {
				return r, fmt.Errorf("%q: a tool's annotation is readOnlyHint or destructiveHint, not %q", text, r.Hint)
			}
		}
	}
	if _, err := path.Match(r.Tool, ""); err != nil || r.Tool == "" {
		return r, fmt.Errorf("%q: %q is not a tool name or glob", text, r.Tool)
	}
	if r.Command != nil && r.Tool != ShellTool {
		return r, fmt.Errorf("%q: only %s's calls are matched by command", text, ShellTool)
	}
	for _, w := range r.Command {
		if _, err := path.Match(w, ""); err != nil {
			return r, fmt.Errorf("%q: the word %q is not a valid glob", text, w)
		}
	}
	return r, nil
}

// looksLikeTool reports whether a one-word rule names tools rather than a
// command: tool names hold "--" (workspace--read, github--search) or "_"
// (code_execution), or it is a glob or an annotation selector.
func looksLikeTool(t string) bool {
	return strings.Contains(t, "--") || strings.ContainsAny(t, "_*?[")
}

// matches reports whether r applies to call, and for shell--run to its
// command cmd (nil: the call's command is not known); maybe, that it may
// apply: a deny rule whose words match only if words known when the
// command runs turn out to be what it names.
func (r *Rule) matches(call Call, cmd *Command) (match, maybe bool) {
	if ok, _ := path.Match(r.Tool, call.Tool); !ok {
		return false, false
	}
	switch r.Hint {
	case "readOnlyHint":
		if !call.ReadOnly {
			return false, false
		}
	case "destructiveHint":
		if !call.Destructive {
			return false, false
		}
	}
	if r.Command == nil {
		return true, false
	}
	if cmd == nil {
		return false, false
	}
	return matchWords(r.Command, cmd)
}

// matchWords reports whether the patterns match cmd's words. A word whose
// value is known only when the command runs ($VAR, $(…)) matches only `*`;
// maybe reports that the words would match if such words were what the
// patterns want: a rule never allows what it cannot see, and a deny is
// never dodged by hiding a word.
func matchWords(pats []string, cmd *Command) (match, maybe bool) {
	words := cmd.Words
	hidden := false
	for i, p := range pats {
		if p == "*" && i == len(pats)-1 {
			return !hidden, hidden
		}
		if i >= len(words) {
			return false, false
		}
		w := words[i]
		if !w.Known {
			hidden = hidden || p != "*"
			continue
		}
		if ok, _ := path.Match(p, w.Value); !ok {
			return false, false
		}
	}
	if len(words) != len(pats) {
		return false, false
	}
	return !hidden, hidden
}

// String is r as a record shows it: its decision, the rule as written
// and where it came from ("deny rm * (--deny)").
func (r *Rule) String() string {
	return r.Decision.String() + " " + r.describe()
}

// describe says r and where it came from: `shell--run(rm *) (--deny)`.
func (r *Rule) describe() string {
	s := strings.TrimSpace(r.Text)
	if r.Source != "" {
		s += " (" + r.Source + ")"
	}
	return s
}
