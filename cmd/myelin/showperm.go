package main

import (
	"strings"
	"time"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
)

// permissionText is the line `history show` prints of the decision stored
// with a call (SPEC §14's audit trail): allowed or denied, by whom — a
// rule (as written, and where), the default, --yes, a person and their
// answer — when, and why.
func permissionText(r permission.Record) string {
	what := r.Decision
	switch r.Decision {
	case "allow":
		what = "allowed"
	case "deny":
		what = "denied"
	}
	switch r.By {
	case "rule":
		what += " by the rule " + ruleText(r.Rule)
	case "default":
		what += " by default"
	case "yes":
		what += " by --yes"
	case "person":
		what += " by a person (" + answerWords(r.Answer) + ")"
		if r.Rule != "" {
			what += ", adding " + ruleText(r.Rule)
		}
	case "session":
		what += " by a person's answer earlier in the session"
		if r.Rule != "" {
			what += " (" + strings.TrimSuffix(ruleText(r.Rule), " (an answer for this session)") + ")"
		}
	case "timeout":
		what += ": no answer came in time"
	case "nobody":
		what += ": no one could be asked"
	case "":
	default:
		what += " by " + r.By
	}
	if !r.At.IsZero() {
		what += " · " + r.At.Local().Format(time.DateTime)
	}
	if r.Reason != "" {
		what += " · " + r.Reason
	}
	return "[permission: " + approval.Printable(what) + "]" // one line, whatever a reason held
}

// answerWords is a person's answer as the terminal offered it.
func answerWords(a string) string {
	switch a {
	case "allow_once":
		return "yes, once"
	case "allow_session":
		return "yes, for the session"
	case "allow_always":
		return "always"
	case "deny":
		return "no"
	}
	return a
}

// deniedText is what a turn's tool line says of a call the policy or a
// person denied ("" for one that ran): who denied it, and, when no one
// could be asked (off a terminal), the whole denial the model got, which
// names the flag that would allow the call — the user reads it too.
func deniedText(r *permission.Record, result string) string {
	if r == nil || r.Decision != "deny" {
		return ""
	}
	switch r.By {
	case "rule", "default":
		if r.Rule != "" {
			return "denied by the rule " + approval.Printable(ruleText(r.Rule))
		}
		return "denied: " + approval.Printable(r.Reason)
	case "person":
		return "denied by you"
	case "timeout":
		return "denied: no answer came in time"
	}
	return "denied: " + approval.Printable(oneLine(result, 400))
}

// ruleText is a Record's Rule without the decision it starts with (the
// line says it already): "rm * (flag --deny)" of "deny rm * (flag --deny)".
func ruleText(rule string) string {
	for _, d := range []string{"allow ", "ask ", "deny "} {
		if r, ok := strings.CutPrefix(rule, d); ok {
			return r
		}
	}
	return rule
}
