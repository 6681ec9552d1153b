package permission

import "time"

// Record is what was decided of one tool call and by whom, stored with
// the call (SPEC §14: "the decision and who made it are stored with the
// call") and shown by `history show`, the API and the inspector: the
// audit trail of what the model was let run.
//
// It is data only: it must not carry anything that changes what the
// model is sent (a stored call replays byte for byte; the record is never
// part of a request).
type Record struct {
	// Decision is "allow" or "deny": what happened to the call.
	Decision string `json:"decision"`
	// By says who decided: "rule" (a rule of the user's file, a flag or
	// the workspace's file), "default" (the built-in default), "yes"
	// (--yes), "person" (asked now), "session" (a person's earlier answer
	// in this session), "timeout" (asked, and no answer came in time) or
	// "nobody" (it had to be asked and no one could be).
	By string `json:"by"`
	// Rule is the rule that decided, as written, with where it came from
	// ("deny rm -rf * (flag --deny)"); empty when none did.
	Rule string `json:"rule,omitempty"`
	// Answer is a person's answer: "allow_once", "allow_session",
	// "allow_always" or "deny"; empty when no one was asked.
	Answer string `json:"answer,omitempty"`
	// Reason says why in words: the policy's reason, or the reason a
	// person gave with a deny (which the model is sent).
	Reason string `json:"reason,omitempty"`
	// At is when the decision was made.
	At time.Time `json:"at"`
}
