// Package approval turns a policy's verdict on a tool call into run or
// do not run (SPEC §14): an allowed call runs, a denied one does not, and
// a call the policy asks about is put to a person through an Asker — a
// terminal prompt (cmd/myelin) or an approval event the API's client
// answers (package server). It remembers a person's "yes for this
// session", writes "always" to the user's rules file, and makes the
// permission.Record stored with each call.
//
// It must not read a terminal or speak HTTP itself (its Askers do), nor
// decide what a rule means (package permission does), nor run a call
// (package tool does, once it is allowed).
package approval

import (
	"context"
	"encoding/json"
	"errors"
)

// Choice is a person's answer to an approval request.
type Choice string

// The answers a person may give.
const (
	// AllowOnce runs this call only.
	AllowOnce Choice = "allow_once"
	// AllowSession runs this call and, for the rest of the session (the
	// process's life for a terminal; the conversation's for the API),
	// every call the same rule (Request.Rule) allows.
	AllowSession Choice = "allow_session"
	// AllowAlways is AllowSession, and also writes Request.Rule to the
	// user's rules file (permission.UserFile).
	AllowAlways Choice = "allow_always"
	// Deny does not run the call; Answer.Reason is sent to the model.
	Deny Choice = "deny"
)

// Request is one call put to a person.
type Request struct {
	// ID names the request ("approval_" and random hex), for an answer
	// over the API to name.
	ID string
	// CallID is the call's own id (tool.Call.ID): the model's call for a
	// call of the conversation's round, a script's or a subagent's inner
	// call otherwise.
	CallID string
	// Tool is the tool the call names; Input its arguments as the model
	// gave them.
	Tool  string
	Input json.RawMessage
	// Command is, for shell--run, the command line; Part the command of
	// it that made the call asked ("" when the line as a whole did).
	Command string
	Part    string
	// Reason is why it is asked (the policy's verdict, in words).
	Reason string
	// Rule is the rule an AllowSession or AllowAlways answer adds, as a
	// user would write it ("go test ./...", "github--create_issue"); empty
	// when no rule can allow it beyond this call (then only AllowOnce and
	// Deny are offered).
	Rule string
}

// Answer is a person's answer to a Request.
type Answer struct {
	Choice Choice
	// Reason is why a person denied the call, in their words; sent to the
	// model with the denial. Empty for an allow.
	Reason string
	// By names who answered, for the record ("terminal", "api"); empty
	// when unknown. BySession with AllowSession says no one was asked
	// now: an earlier answer for the session allowed it (one given to
	// another process serving the same conversation).
	By string
}

// Asker puts a call to a person and returns their answer. It may be called
// from several calls at once, and must return when ctx is done.
type Asker interface {
	Ask(ctx context.Context, r Request) (Answer, error)
}

// ErrNoOne is what an Asker returns when there is no person to ask (not a
// terminal; no client watching that may answer): the call is denied, and
// the model is told what rule or flag would allow it.
var ErrNoOne = errors.New("no one can be asked")

// ErrExpired is what an Asker returns when no answer came in time: the
// call is denied as expired.
var ErrExpired = errors.New("no answer came in time")
