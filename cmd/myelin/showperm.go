package main

import (
	"time"

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
		what += " by the rule " + r.Rule
	case "default":
		what += " by default"
	case "yes":
		what += " by --yes"
	case "person":
		what += " by a person (" + answerWords(r.Answer) + ")"
	case "session":
		what += " by a person's answer earlier in the session"
		if r.Rule != "" {
			what += " (" + r.Rule + ")"
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
	return "[permission: " + what + "]"
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
