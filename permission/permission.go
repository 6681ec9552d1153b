// Package permission decides what the model may run (SPEC §14): every
// tool call — the model's own and each one a script it wrote makes — is
// checked against a Policy before it runs, and is allowed, denied, or to
// be asked of a person. It owns the rules (where they come from, how they
// are written, how they match a call), and for shell--run the reading of
// a command line into the commands it runs, each checked on its own.
//
// It decides only: it must not ask anyone, run anything or read the
// terminal. Who asks (a terminal, the HTTP API) and what a decision does
// to the call (an error result saying it was denied, the decision stored
// with the call) belong to the callers.
package permission

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Decision is what a policy says of a call. Allow < Ask < Deny: the
// larger is the less allowed, and a call made of parts (a compound shell
// command) is as allowed as its least allowed part.
type Decision int

// The decisions.
const (
	Allow Decision = iota
	Ask
	Deny
)

// String is the decision as the policy file and the audit trail spell it.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// ShellTool is the tool whose calls are matched by command: its input's
// "command" is a bash command line.
const ShellTool = "shell--run"

// Call is what a policy checks: the tool's name, its input as the model
// gave it, and what the tool says of itself.
type Call struct {
	Tool  string
	Input json.RawMessage
	// ReadOnly is set for a tool that changes nothing (the workspace's
	// read, grep, list and glob; an MCP tool with readOnlyHint).
	ReadOnly bool
	// Destructive is set for an MCP tool whose destructiveHint is true
	// (or left out, which means true) and that is not read-only.
	Destructive bool
}

// Verdict is a policy's decision on a call, and why.
type Verdict struct {
	Decision Decision
	// Rule is the rule that decided, nil when no rule matched and the
	// built-in default did.
	Rule *Rule
	// Part is, for a shell command line, the command of it that decided
	// ("rm -rf build" of "make && rm -rf build"); "" otherwise.
	Part string
	// Reason says in words what decided: the rule and where it came from,
	// or the default; it is what a denied call's error result says.
	Reason string
	// Yes is set when --yes (Policy.Yes) turned what would be asked into
	// an allow.
	Yes bool
	// sticky marks an ask that --yes does not turn into an allow: a
	// command line that could not be read, or a command that may be one a
	// rule denies; no rule could be checked against it.
	sticky bool
}

// Policy is the rules a call is checked against. Its zero value decides
// by the built-in defaults alone: tools that only read are allowed, every
// other call is asked.
type Policy struct {
	// User are the user's rules, in the order they were given: from the
	// user's configuration file, then from flags. They may allow, ask or
	// deny.
	User []Rule
	// Workspace are the rules of the workspace's file. A workspace is
	// written by whoever controls the repository, so its rules may only
	// narrow what the user allows: their ask and deny apply, an allow
	// among them is never taken (Load leaves it out, with a warning).
	Workspace []Rule
	// Yes allows every call no rule denies (--yes): what would be asked
	// is allowed.
	Yes bool
}

// Check decides call. A deny rule that matches wins over an ask rule,
// which wins over an allow rule; with none, the built-in default decides
// (allowed when the tool only reads, asked otherwise). A shell--run
// command line is split into the commands it runs (Commands), each
// decided so, and the line is as allowed as its least allowed command.
func (p *Policy) Check(call Call) Verdict {
	var v Verdict
	if call.Tool == ShellTool {
		v = p.checkShell(call)
	} else {
		v = p.decide(call, nil)
	}
	if p.Yes && v.Decision == Ask && !v.sticky {
		v.Decision, v.Yes = Allow, true
		v.Reason += "; allowed by --yes"
	}
	return v
}

// checkShell decides a shell--run call command by command.
func (p *Policy) checkShell(call Call) Verdict {
	var in struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil || strings.TrimSpace(in.Command) == "" {
		v := p.decide(call, nil)
		if v.Decision == Allow && v.Rule != nil && len(v.Rule.Command) > 0 {
			v.Decision, v.Reason = Ask, "the call gives no command to check against "+v.Rule.describe()
		}
		return v
	}
	cmds, err := Commands(in.Command)
	if err != nil {
		v := p.decide(call, &Command{Dynamic: true, Text: in.Command})
		if v.Decision != Deny {
			v.Decision, v.sticky = Ask, true
			v.Reason = fmt.Sprintf("asked: the command line could not be read (%v), so no rule can allow it", err)
		}
		return v
	}
	worst := Verdict{Decision: Allow, Reason: "it runs no command"}
	for i := range cmds {
		v := p.decide(call, &cmds[i])
		v.Part = cmds[i].Text
		if i == 0 || v.Decision > worst.Decision {
			worst = v
		}
	}
	if len(cmds) > 1 && worst.Part != "" {
		worst.Reason = fmt.Sprintf("%s (of the commands in %q, the least allowed is %q)", worst.Reason, in.Command, worst.Part)
	}
	return worst
}

// decide decides call (for shell--run, its one command cmd) by the rules,
// then the default.
func (p *Policy) decide(call Call, cmd *Command) Verdict {
	var maybe *Rule // a deny rule the command may be, by words known only when it runs
	for _, d := range []Decision{Deny, Ask, Allow} {
		if d == Ask && maybe != nil {
			return Verdict{Decision: Ask, Rule: maybe, sticky: true, Reason: fmt.Sprintf("asked: %q may be a command that %s denies: some of its words are known only when it runs", cmd.Text, maybe.describe())}
		}
		for _, layer := range [][]Rule{p.User, p.Workspace} {
			for i := range layer {
				r := &layer[i]
				if r.Decision != d || (d == Allow && r.workspace) {
					continue
				}
				match, may := r.matches(call, cmd)
				if may && d == Deny && maybe == nil {
					maybe = r
				}
				if !match {
					continue
				}
				if d == Allow && cmd != nil && cmd.Assigns {
					return Verdict{Decision: Ask, Rule: r, Reason: fmt.Sprintf("asked: %q sets variables before its command, which change what it does, and %s allows the command alone", cmd.Text, r.describe())}
				}
				return Verdict{Decision: d, Rule: r, Reason: fmt.Sprintf("%s by %s", verb(d), r.describe())}
			}
		}
	}
	if call.ReadOnly {
		return Verdict{Decision: Allow, Reason: "allowed by default: " + call.Tool + " only reads"}
	}
	what := call.Tool
	if cmd != nil && cmd.Text != "" {
		what = fmt.Sprintf("%s %q", call.Tool, cmd.Text)
	}
	return Verdict{Decision: Ask, Reason: fmt.Sprintf("asked by default: no rule allows %s", what)}
}

// verb is d as a past participle.
func verb(d Decision) string {
	switch d {
	case Allow:
		return "allowed"
	case Deny:
		return "denied"
	}
	return "asked"
}
