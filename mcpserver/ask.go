package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
)

// sessionKey carries the MCP session of the host's call run under a ctx.
type sessionKey struct{}

// withSession is ctx whose call is ss's.
func withSession(ctx context.Context, ss *sdk.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	return context.WithValue(ctx, sessionKey{}, ss)
}

// sessionOf is the MCP session of the call run under ctx, nil when none.
func sessionOf(ctx context.Context) *sdk.ServerSession {
	ss, _ := ctx.Value(sessionKey{}).(*sdk.ServerSession)
	return ss
}

// sessionID is ss's id ("" for stdio's one session).
func sessionID(ss *sdk.ServerSession) string {
	if ss == nil {
		return ""
	}
	return ss.ID()
}

// ByHost is the Answer.By of an answer the host's user gave by
// elicitation.
const ByHost = "mcp host"

// Asker puts what the permission policy asks of a host's call to the
// host's user (approval.Gate's Asker): as a form (elicitation/create) on
// the session of the call being checked, when that host declared the
// elicitation capability (form mode); otherwise approval.ErrNoOne, and
// the call is denied with the rule or flag that would allow it. It must
// be used only as the Gate of this Server's calls (Config.Gate): it
// finds the session on the call's context.
func (s *Server) Asker() approval.Asker { return asker{} }

// asker is the Server's Asker.
type asker struct{}

// Ask puts r to the user of the host whose call it is. The form's one
// required field, choice, takes the answers a person may give
// (approval.Choice: allow_once, allow_session and allow_always when a
// rule can allow more than this call, deny); reason, optional, is why
// they deny it, which the model reads. Declining or cancelling the form
// denies the call. ctx's end cancels the question.
//
// A host of protocol 2025-11-25 or before is sent the form
// (elicitation/create) while the call waits. A host of 2026-07-28 or
// later takes no request from a server: the host's call itself is
// answered with the form as an input request, and the call runs when
// the host sends it again with the answer (multi round-trip, SEP-2322;
// inputs.go). That works for the question about the host's own call,
// which is asked before it starts; a call that call makes (a script's)
// cannot be asked about there, and is denied with what would allow it.
func (asker) Ask(ctx context.Context, r approval.Request) (approval.Answer, error) {
	ss := sessionOf(ctx)
	if ss == nil || !canElicitForm(ss) {
		return approval.Answer{}, fmt.Errorf("%w: the MCP host did not declare the elicitation capability, so its user cannot be asked", approval.ErrNoOne)
	}
	choices := choicesFor(r)
	params := &sdk.ElicitParams{Mode: "form", Message: question(r, choices), RequestedSchema: form(choices)}
	var res *sdk.ElicitResult
	if roundTrips(ss) {
		in := inputsOf(ctx)
		if in == nil || r.CallID != in.callID {
			return approval.Answer{}, fmt.Errorf("%w: the MCP host speaks protocol %s, where its user can be asked only before the host's own call starts, not about the calls that call makes", approval.ErrNoOne, ss.InitializeParams().ProtocolVersion)
		}
		if res = in.answer(r); res == nil {
			in.ask(r, params)
			return approval.Answer{}, errInputRequired
		}
	} else {
		var err error
		if res, err = ss.Elicit(ctx, params); err != nil {
			if ctx.Err() != nil {
				return approval.Answer{}, ctx.Err()
			}
			return approval.Answer{}, fmt.Errorf("asking the MCP host's user about %s: %w", r.Tool, err)
		}
	}
	switch res.Action {
	case "accept":
		c, _ := res.Content["choice"].(string)
		if !slices.Contains(choices, approval.Choice(c)) {
			return approval.Answer{}, fmt.Errorf("the MCP host's user answered choice %q, which is not one of %s", c, joinChoices(choices))
		}
		why, _ := res.Content["reason"].(string)
		if approval.Choice(c) != approval.Deny {
			why = ""
		}
		return approval.Answer{Choice: approval.Choice(c), Reason: why, By: ByHost}, nil
	case "decline", "cancel":
		return approval.Answer{Choice: approval.Deny, By: ByHost}, nil
	}
	return approval.Answer{}, fmt.Errorf("the MCP host answered the question about %s with action %q, not accept, decline or cancel", r.Tool, res.Action)
}

// canElicitForm reports whether ss's host takes form elicitations: it
// declared the capability, with form mode or with no mode (which means
// form).
func canElicitForm(ss *sdk.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// choicesFor is what a person may answer r: every choice when a rule can
// allow more than this call, else allow_once and deny.
func choicesFor(r approval.Request) []approval.Choice {
	if r.Rule == "" {
		return []approval.Choice{approval.AllowOnce, approval.Deny}
	}
	return []approval.Choice{approval.AllowOnce, approval.AllowSession, approval.AllowAlways, approval.Deny}
}

func joinChoices(cs []approval.Choice) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// question is the form's message: the call, why it is asked, and what
// each choice does. Every string in it that the model wrote or chose —
// the tool's name, the command, the part asked about, the input — goes
// through approval.Visible, as on the terminal (the reason, myelin's
// words quoting the model's with %q, through approval.Printable): a line
// break, carriage return, escape sequence or bidi override is shown
// escaped, so that the model cannot end the command's line and write
// lines of the question itself ("Why you are asked: …"), nor draw on a
// terminal host. Each is clipped before it is escaped; the
// input, JSON, is shown by approval.VisibleJSON (the same value on one
// line, its own escapes as they are) and clipped after.
func question(r approval.Request, choices []approval.Choice) string {
	var b strings.Builder
	fmt.Fprintf(&b, "myelin asks whether this call of %s may run.\n", shown(r.Tool, 200))
	switch {
	case r.Command != "" && r.Part != "":
		fmt.Fprintf(&b, "Command: %s\nThe part asked about: %s\n", shown(r.Command, 2000), shown(r.Part, 500))
	case r.Command != "":
		fmt.Fprintf(&b, "Command: %s\n", shown(r.Command, 2000))
	default:
		fmt.Fprintf(&b, "Input: %s\n", clipText(approval.VisibleJSON(r.Input), 2000))
	}
	fmt.Fprintf(&b, "Why you are asked: %s\n", approval.Printable(clipText(r.Reason, 2000)))
	for _, c := range choices {
		switch c {
		case approval.AllowOnce:
			b.WriteString("allow_once: run this call only.\n")
		case approval.AllowSession:
			fmt.Fprintf(&b, "allow_session: run it, and every call the rule %q allows, for the rest of this MCP session.\n", r.Rule)
		case approval.AllowAlways:
			fmt.Fprintf(&b, "allow_always: as allow_session, and add the rule %q to your rules file.\n", r.Rule)
		case approval.Deny:
			b.WriteString("deny: do not run it (the reason, if you give one, is told to the model).")
		}
	}
	return b.String()
}

// form is the elicitation's schema: the choice, and the reason for a
// denial.
func form(choices []approval.Choice) map[string]any {
	enum := make([]any, len(choices))
	for i, c := range choices {
		enum[i] = string(c)
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"choice": map[string]any{"type": "string", "title": "Your answer", "enum": enum,
				"description": "whether the call may run: " + joinChoices(choices)},
			"reason": map[string]any{"type": "string", "title": "Reason (for deny)",
				"description": "why you deny the call; the model reads it"},
		},
		"required": []any{"choice"},
	}
}

// shown is s as the question shows it: at most n characters of it, then
// what a person would not see as itself escaped (approval.Visible).
func shown(s string, n int) string { return approval.Visible(clipText(s, n)) }

// clipText is s cut to at most n characters, with "…" when cut.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
