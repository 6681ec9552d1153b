package permission

import (
	"encoding/json"
	"strings"
)

// RulesFor is the rules that a person's "yes for this session" or
// "always" answer to call adds (approval.AllowSession, AllowAlways), as a
// user would write them: for a tool, its name ("workspace--write"); for
// shell--run, the literal words of each command of the line that p asks
// about ("go test ./...", "make build"), so that the same commands are
// allowed next time and nothing more. None when no rule can allow the
// call beyond this once: a command with words known only when it runs
// ($VAR, $(…), a glob), with variables set before it, with a word no
// rule can spell (one holding white space, or empty), a line that cannot
// be read, or a call asked by an explicit ask rule (which asks every
// time). It must not widen: each rule matches the command it was made
// from exactly, glob characters in its words escaped.
func (p *Policy) RulesFor(call Call) []string {
	v := p.Check(call)
	if v.Decision != Ask || v.sticky || (v.Rule != nil && v.Rule.Decision == Ask) {
		return nil
	}
	if call.Tool != ShellTool {
		return []string{call.Tool}
	}
	var in struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil
	}
	cmds, err := Commands(in.Command)
	if err != nil {
		return nil
	}
	var out []string
	for i := range cmds {
		c := &cmds[i]
		cv := p.decide(call, c)
		if cv.Decision != Ask {
			continue
		}
		if cv.Rule != nil || c.Dynamic || c.Assigns || len(c.Words) == 0 {
			return nil // asked by a rule, or no rule can name it
		}
		words := make([]string, len(c.Words))
		for j, w := range c.Words {
			if !w.Known || w.Value == "" || strings.ContainsAny(w.Value, " \t\n\r\v\f()") {
				return nil
			}
			words[j] = escapeGlob(w.Value)
		}
		rule := strings.Join(words, " ")
		if looksLikeTool(rule) && len(words) == 1 {
			rule = ShellTool + "(" + rule + ")" // a one-word command read as a tool name otherwise
		}
		if _, err := ParseRule(rule, Allow, ""); err != nil {
			return nil
		}
		if !contains(out, rule) {
			out = append(out, rule)
		}
	}
	return out
}

// escapeGlob is w with the characters path.Match reads as a pattern
// escaped, so that a rule's word matches w alone.
func escapeGlob(w string) string {
	if !strings.ContainsAny(w, `*?[\`) {
		return w
	}
	var b strings.Builder
	for _, r := range w {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
