package permission

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command is one command a command line runs: `a && b`, `a | b`, `a; b`,
// `$(a)`, `(a)`, a function's body, each command of them is one, and so
// is the command a wrapper runs (`sudo a`, `timeout 5 a`, `env X=1 a`,
// `xargs a`) and each command of a string given to a shell (`bash -c
// '…'`, `eval …`).
type Command struct {
	// Words are its words after quotes are taken off, the command's name
	// first.
	Words []Word
	// Text is the command as written in the line.
	Text string
	// Assigns is set when it starts with variable assignments (`PAGER=x
	// git log`), which change what it does.
	Assigns bool
	// Dynamic is set when its words are not all known before it runs.
	Dynamic bool
}

// Word is a word of a command: its value when it is known before the
// command runs (a literal, quoted or not), else Known is false ($VAR,
// $(…), a glob the shell expands).
type Word struct {
	Value string
	Known bool
}

// maxDepth bounds how deep strings given to a shell are read as command
// lines (`bash -c "bash -c '…'"`).
const maxDepth = 8

// Commands is every command line runs, in the order they are written;
// an error when it is not a command line bash would read (or is too deep
// a nest of shells in shells).
func Commands(line string) ([]Command, error) {
	var out []Command
	err := commands(line, 0, &out)
	return out, err
}

func commands(line string, depth int, out *[]Command) error {
	if depth > maxDepth {
		return errors.New("shells nested too deep to read")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return err
	}
	var failed error
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || failed != nil {
			return failed == nil
		}
		c := Command{Assigns: len(call.Assigns) > 0, Text: text(line, call)}
		for _, w := range call.Args {
			v, known := literal(w)
			c.Words = append(c.Words, Word{Value: v, Known: known})
			c.Dynamic = c.Dynamic || !known
		}
		*out = append(*out, c)
		failed = inner(c, depth, out)
		return failed == nil
	})
	return failed
}

// inner adds the commands c runs in its turn: the command a wrapper runs,
// and a shell's string read as a command line.
func inner(c Command, depth int, out *[]Command) error {
	words := c.Words
	for len(words) > 0 && words[0].Known {
		name := words[0].Value
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:] // /usr/bin/env is env
		}
		switch {
		case shells[name]:
			for i, w := range words[1:] {
				if w.Known && w.Value == "-c" && i+2 < len(words) {
					s := words[i+2]
					if !s.Known {
						return nil // a dynamic string: the command is dynamic already
					}
					if err := commands(s.Value, depth+1, out); err != nil {
						return fmt.Errorf("the command given to %s -c: %w", name, err)
					}
					return nil
				}
			}
			return nil
		case name == "eval":
			var b strings.Builder
			for _, w := range words[1:] {
				if !w.Known {
					return nil
				}
				b.WriteString(w.Value + " ")
			}
			if err := commands(b.String(), depth+1, out); err != nil {
				return fmt.Errorf("the command given to eval: %w", err)
			}
			return nil
		}
		skip, ok := wrappers[name]
		if !ok {
			return nil
		}
		rest := skipOptions(words[1:], skip)
		if len(rest) == 0 {
			return nil
		}
		*out = append(*out, Command{Words: rest, Text: joinWords(rest), Dynamic: c.Dynamic})
		words = rest
	}
	return nil
}

// shells are the programs whose `-c STRING` is a command line.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "busybox": true}

// wrappers are the programs that run the command their words after
// their options name, and how many words after the options are theirs
// (timeout's duration).
var wrappers = map[string]int{
	"sudo": 0, "doas": 0, "env": 0, "exec": 0, "nohup": 0, "nice": 0, "ionice": 0,
	"time": 0, "command": 0, "builtin": 0, "setsid": 0, "stdbuf": 0, "xargs": 0,
	"chroot": 1, "timeout": 1, "taskset": 1, "flock": 1, "watch": 0, "strace": 0, "unbuffer": 0,
}

// skipOptions is words past a wrapper's options (`-n 5` of nice and
// `-i` of env included as far as they can be told: a word starting with
// `-`, a NAME=VALUE), then past its own n words.
func skipOptions(words []Word, n int) []Word {
	i := 0
	for i < len(words) {
		w := words[i]
		if !w.Known {
			break
		}
		if w.Value == "--" {
			i++
			break
		}
		if strings.HasPrefix(w.Value, "-") || (strings.Contains(w.Value, "=") && !strings.HasPrefix(w.Value, "=")) {
			i++
			continue
		}
		break
	}
	if i+n > len(words) {
		return nil
	}
	return words[i+n:]
}

// literal is w's value when it is known before the command runs: made of
// plain text and quoted text, with no expansion, substitution or glob.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[\\") {
				return "", false // a glob the shell expands, or an escape
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false // $'…' has escapes of its own
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsRune(lit.Value, '\\') {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// text is the part of line that n spans.
func text(line string, n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(line) || s > e {
		return ""
	}
	return line[s:e]
}

// joinWords is words as a command's text.
func joinWords(words []Word) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = w.Value
		if !w.Known {
			parts[i] = "…"
		}
	}
	return strings.Join(parts, " ")
}
