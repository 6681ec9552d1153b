package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/tool"
)

// Gate is the tool.Gate myelin runs calls under: each call is checked
// against Policy, and one the policy asks about is put to a person
// through Asker. It makes the permission.Record of each call (who
// decided, by what rule, when), remembers a person's "yes for this
// session" (in memory) and writes "always" to the user's rules file.
//
// A Gate must not be copied once used. Its fields must not be changed
// while calls are checked.
type Gate struct {
	// Policy is the rules calls are checked against; nil decides by the
	// built-in defaults alone (reads allowed, the rest asked).
	Policy *permission.Policy
	// Asker puts a call to a person; nil means nobody can be asked: a
	// call the policy asks about is denied (Record.By "nobody"), and the
	// model is told what would allow it.
	Asker Asker
	// UserFile is the user's rules file (permission.UserFile), where an
	// AllowAlways answer adds its rule (permission.Remember), and which
	// a denial for want of anyone to ask names. Empty: an AllowAlways
	// answer is taken as AllowSession.
	UserFile string
	// Session names the session a call belongs to, for the "yes for this
	// session" answers (AllowSession): the rules they add apply to the
	// calls of that session only. nil is SessionOf: the session a
	// caller put on the context with WithSession, the gate's one session
	// ("") when none. A terminal has one session, the process; the HTTP
	// API keys it by the conversation (the server sets WithSession on the
	// turn's context, which the calls of its scripts and subagents
	// inherit).
	Session func(ctx context.Context) string
	// Now is the clock of the records; nil is time.Now.
	Now func() time.Time

	mu       sync.Mutex
	sessions map[string][]permission.Rule // the rules AllowSession answers added, by session
}

// sessionKey carries the session of the calls run under a ctx.
type sessionKey struct{}

// WithSession is ctx whose calls belong to session key (Gate.Session):
// the server sets it to the conversation's id on the context of a turn.
func WithSession(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, sessionKey{}, key)
}

// SessionOf is the session of ctx (WithSession), "" when none was set.
func SessionOf(ctx context.Context) string {
	k, _ := ctx.Value(sessionKey{}).(string)
	return k
}

// The values of permission.Record.By.
const (
	ByRule    = "rule"
	ByDefault = "default"
	ByYes     = "yes"
	ByPerson  = "person"
	BySession = "session"
	ByTimeout = "timeout"
	ByNobody  = "nobody"
)

// Check decides one call (tool.Gate): by the policy with the session's
// rules; what the policy asks about is put to the Asker, unless q.NoAsk
// or there is none (then denied). An Asker's ErrExpired denies the call
// by "timeout", its ErrNoOne by "nobody"; ctx's end returns ctx's error
// (the call is cancelled, nothing is recorded).
func (g *Gate) Check(ctx context.Context, q tool.Question) (tool.Ruling, error) {
	call := permission.Call{Tool: q.Call.Name, Input: q.Call.Input}
	if q.Tool != nil {
		call.ReadOnly, call.Destructive = q.Tool.ReadOnly, q.Tool.Destructive
	}
	session := g.session(ctx)
	p := g.policy(session)
	v := p.Check(call)
	rec := permission.Record{Decision: v.Decision.String(), Reason: v.Reason, At: g.now()}
	if v.Rule != nil {
		rec.Rule = v.Rule.String()
	}
	switch v.Decision {
	case permission.Allow:
		switch {
		case v.Yes:
			rec.By = ByYes
		case v.Rule != nil && v.Rule.Source == sessionSource:
			rec.By, rec.Rule = BySession, v.Rule.Text
		case v.Rule != nil:
			rec.By = ByRule
		default:
			rec.By = ByDefault
		}
		return tool.Ruling{Record: rec}, nil
	case permission.Deny:
		rec.By = ByRule
		if v.Rule == nil {
			rec.By = ByDefault
		}
		return tool.Ruling{Record: rec, Denial: fmt.Sprintf("the call of %s was denied by the permission policy and did not run: %s", call.Tool, v.Reason)}, nil
	}
	rules := p.RulesFor(call)
	if q.NoAsk || g.Asker == nil {
		why := "no one can be asked"
		if q.NoAsk {
			why = "no one is asked when a conversation is recovered"
		}
		return g.nobody(call, v, rules, rec, why), nil
	}
	req := Request{ID: NewRequestID(), Tool: call.Tool, Input: call.Input, Part: v.Part, Reason: v.Reason, Rule: strings.Join(rules, "; ")}
	if call.Tool == permission.ShellTool {
		req.Command = commandOf(call.Input)
	}
	ans, err := g.Asker.Ask(ctx, req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return tool.Ruling{}, ctx.Err()
		case errors.Is(err, ErrExpired):
			rec.Decision, rec.By, rec.Reason = permission.Deny.String(), ByTimeout, v.Reason+"; no answer came in time"
			return tool.Ruling{Record: rec, Denial: fmt.Sprintf("the call of %s was not run: it needed a person's approval (%s) and no answer came in time; do not try it again unless the user asks for it", call.Tool, v.Reason)}, nil
		case errors.Is(err, ErrNoOne):
			return g.nobody(call, v, rules, rec, err.Error()), nil
		default:
			rec.Decision, rec.By, rec.Reason = permission.Deny.String(), ByNobody, fmt.Sprintf("%s; asking failed: %v", v.Reason, err)
			return tool.Ruling{Record: rec, Denial: fmt.Sprintf("the call of %s was not run: it needed a person's approval (%s) and asking failed: %v", call.Tool, v.Reason, err)}, nil
		}
	}
	rec.At, rec.By, rec.Answer = g.now(), ByPerson, string(ans.Choice)
	switch ans.Choice {
	case AllowOnce:
		rec.Decision = permission.Allow.String()
	case AllowSession, AllowAlways:
		rec.Decision = permission.Allow.String()
		if len(rules) > 0 {
			g.remember(session, rules)
			rec.Rule = "allow " + req.Rule
		}
		if ans.Choice == AllowAlways && len(rules) > 0 {
			if why := g.always(rules); why != "" {
				rec.Reason = v.Reason + "; " + why
			}
		}
	case Deny:
		rec.Decision = permission.Deny.String()
		said := strings.TrimSpace(ans.Reason)
		if said != "" {
			rec.Reason = said
			return tool.Ruling{Record: rec, Denial: fmt.Sprintf("the user denied this call of %s, and it did not run. Their reason: %s", call.Tool, said)}, nil
		}
		rec.Reason = "denied by the user, who gave no reason"
		return tool.Ruling{Record: rec, Denial: fmt.Sprintf("the user denied this call of %s, and it did not run (they gave no reason); ask them before trying it another way", call.Tool)}, nil
	default:
		rec.Decision, rec.Reason = permission.Deny.String(), fmt.Sprintf("the answer %q is not one a person may give", ans.Choice)
		return tool.Ruling{Record: rec, Denial: fmt.Sprintf("the call of %s did not run: the answer to its approval (%q) was not allow_once, allow_session, allow_always or deny", call.Tool, ans.Choice)}, nil
	}
	return tool.Ruling{Record: rec}, nil
}

// nobody is the ruling on a call that had to be asked and no one could
// be: denied, with what would allow it.
func (g *Gate) nobody(call permission.Call, v permission.Verdict, rules []string, rec permission.Record, why string) tool.Ruling {
	rec.Decision, rec.By, rec.Reason = permission.Deny.String(), ByNobody, v.Reason+"; "+why
	what := call.Tool
	if v.Part != "" {
		what = fmt.Sprintf("%s %q", call.Tool, v.Part)
	}
	msg := fmt.Sprintf("the call of %s was denied and did not run: %s needs a person's approval (%s), and %s.", call.Tool, what, v.Reason, why)
	if len(rules) > 0 {
		var flags, quoted []string
		for _, r := range rules {
			flags = append(flags, "--allow "+shellQuote(r))
			b, _ := json.Marshal(r)
			quoted = append(quoted, string(b))
		}
		msg += fmt.Sprintf(" The user can allow it by running myelin with %s", strings.Join(flags, " "))
		if g.UserFile != "" {
			msg += fmt.Sprintf(", or by adding %s to the \"allow\" list of %s", strings.Join(quoted, ", "), g.UserFile)
		}
		msg += "."
	} else {
		msg += " No rule can allow it beyond one approval (its words are known only when it runs, or a rule asks about it every time): do it another way, with commands written out in full."
	}
	return tool.Ruling{Record: rec, Denial: msg}
}

// sessionSource is the Source of the rules AllowSession answers add.
const sessionSource = "an answer for this session"

// policy is the gate's policy with session's rules added to the user's.
func (g *Gate) policy(session string) *permission.Policy {
	p := g.Policy
	if p == nil {
		p = &permission.Policy{}
	}
	g.mu.Lock()
	extra := g.sessions[session]
	g.mu.Unlock()
	if len(extra) == 0 {
		return p
	}
	q := *p
	q.User = append(append([]permission.Rule(nil), p.User...), extra...)
	return &q
}

// remember adds rules to session's.
func (g *Gate) remember(session string, rules []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions == nil {
		g.sessions = map[string][]permission.Rule{}
	}
	for _, text := range rules {
		r, err := permission.ParseRule(text, permission.Allow, sessionSource)
		if err == nil {
			g.sessions[session] = append(g.sessions[session], r)
		}
	}
}

// always writes rules to the user's file; what went wrong, in words.
func (g *Gate) always(rules []string) string {
	if g.UserFile == "" {
		return "allowed for this session only: there is no user rules file to write to"
	}
	for _, r := range rules {
		if err := permission.Remember(g.UserFile, r); err != nil {
			return fmt.Sprintf("allowed for this session only: writing the rule to %s failed: %v", g.UserFile, err)
		}
	}
	return ""
}

func (g *Gate) session(ctx context.Context) string {
	if g.Session != nil {
		return g.Session(ctx)
	}
	return SessionOf(ctx)
}

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// NewRequestID is a new Request.ID: "approval_" and random hex.
func NewRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "approval_" + hex.EncodeToString(b)
}

// commandOf is a shell--run call's command line.
func commandOf(input json.RawMessage) string {
	var in struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(input, &in)
	return in.Command
}

// shellQuote is s quoted for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]()&|;<>~#!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
