package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/window"
)

// RefusedTwice is the Reason of a turn the refusal guard ended: the model
// refused to answer a round's results, and refused again once they were
// withheld (Agent.RefusalGuard).
const RefusedTwice = "refused_twice"

// The refusal guard (Agent.RefusalGuard, docs/agent.md "The refusal
// guard"): when the model's answer to a round's results ends with the
// provider's refusal (provider.Response.Refused), the round's results are
// withheld — a Context record (history.Edit with Refusal set) replaces
// each in the requests by a placeholder naming the workspace file that
// keeps it whole — and the request is sent once more. The refused answer
// is stored in that record, never as a message, so the conversation the
// model reads goes on as if it had not come. The answer to the withheld
// round is stored as any answer; if it is a refusal too, it ends the turn
// (RefusedTwice). The guard changes no stored message: the results stay
// in the history as they were, and the record stays in force, so every
// later request — after a restart too — sends the same placeholders.

// guardStep is what the guard decided for a refused answer.
type guardStep int

const (
	notGuarded   guardStep = iota // no round's results to withhold: the answer is stored as any other
	withheld                      // the results are withheld: send the request again
	refusedTwice                  // withheld already: the answer ends the turn
)

// guard meets a refused answer resp of conversation id when the agent's
// RefusalGuard is on: when it answers a round's results not withheld yet,
// it withholds them (the edit is stored, reported by a ContextEdit event)
// and says to send the request again; when it answers results withheld
// already, it says the turn ends.
func (a *Agent) guard(ctx context.Context, id string, resp provider.Response, streamed string, on func(Event)) (guardStep, error) {
	stored, err := a.Store.Messages(ctx, id)
	if err != nil {
		return notGuarded, err
	}
	k := answeredResults(stored)
	if k < 0 {
		return notGuarded, nil
	}
	if withheldAt(stored, k) {
		return refusedTwice, nil
	}
	_, env := a.files(ctx, id)
	edit, failed := withhold(env.Store, stored, k)
	if len(edit.Cleared) == 0 {
		return refusedTwice, nil // every result is out of the requests already: withholding changes nothing
	}
	edit.Refusal = &history.Refusal{Stop: resp.StopReason, Text: result.WellFormed(streamed), Usage: resp.Message.Usage}
	if streamed == "" {
		edit.Refusal.Text = textOf(resp.Message)
	}
	edit.Why = fmt.Sprintf("refusal guard: the model's answer to the results of message %d ended with the provider's refusal (stop reason %q); they are withheld from requests and the request sent once more", k+1, resp.StopReason)
	if err := a.store(ctx, id, on, history.Message{Role: history.Context, Edit: &edit}); err != nil {
		return notGuarded, err
	}
	text := withheldText(edit)
	if failed != nil {
		text += "; " + plural(len(failed), "result", "results") + " could not be written to a workspace file (" + errors.Join(failed...).Error() + "): the history keeps them"
	}
	on(Event{Kind: ContextEdit, Text: text, Edit: &edit})
	edited(ctx, telemetry.EditWithheld, &edit)
	return withheld, nil
}

// answeredResults is the place of the last message of stored (records aside)
// when it is a user message holding tool results — what the model's
// answer answered — or -1.
func answeredResults(stored []history.Message) int {
	for i := len(stored) - 1; i >= 0; i-- {
		m := stored[i]
		if m.Role == history.Context {
			continue
		}
		if m.Role == history.User && m.HoldsResults() {
			return i
		}
		return -1
	}
	return -1
}

// withheldAt reports whether a guard's record withheld the results of
// stored message k.
func withheldAt(stored []history.Message, k int) bool {
	for _, m := range stored[k+1:] {
		if e := m.Edit; m.Role == history.Context && e != nil && e.Refusal != nil {
			for _, c := range e.Cleared {
				if c.Msg == k {
					return true
				}
			}
		}
	}
	return false
}

// withhold is the edit that withholds the results of stored message k:
// each result not taken out of the requests already gets a placeholder
// naming the workspace file that keeps it whole — its spill file, or one
// written now as a spill is (through files, the turn's result.Store). A
// result whose file cannot be written is withheld all the same (the
// history keeps it), its placeholder saying why; the errors are returned.
func withhold(files result.Store, stored []history.Message, k int) (history.Edit, []error) {
	out := window.Gather(stored)
	var edit history.Edit
	var failed []error
	for _, p := range stored[k].Parts {
		if p.Type != history.ToolResultPart || out.ResultCleared(k, p.CallID) {
			continue
		}
		path, images, err := keepWhole(files, "withheld-"+fileLabel(p.CallID), p)
		whyNot := ""
		if err != nil {
			if !errors.Is(err, result.ErrNoWorkspace) {
				failed = append(failed, err)
			}
			path, images, whyNot = "", nil, err.Error()
		}
		chars := result.Chars(p.Text)
		edit.Cleared = append(edit.Cleared, history.Cleared{Msg: k, CallID: p.CallID, Text: WithheldResult(chars, p.IsError, path, images, whyNot),
			Path: path, Chars: chars, Images: len(p.Images)})
	}
	return edit, failed
}

// WithheldResult is the text a request sends in place of a tool result the
// refusal guard withheld: that it was withheld after a refusal, its size,
// that the tool has already run, and the workspace file keeping it whole
// (images: the files of its images, if it had any). whyNotKept, when not
// "", says why there is no file (path is then ""). The text is stored with
// the decision (history.Cleared.Text), so a later change of these words
// never changes a stored conversation's requests. It offers no ready call
// to read the file: the model refused what it read there, and reads it
// again only if it chooses to.
func WithheldResult(chars int, isError bool, path string, images []string, whyNotKept string) string {
	what := "this tool result"
	if isError {
		what = "this error result"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[myelin: %s (%d characters) was withheld after a refusal: the model refused to go on after reading this round's results, so they are not shown here. The tool has already run; running it again is not needed to have its result. ", what, chars)
	if path == "" {
		fmt.Fprintf(&b, "The result could not be kept in a workspace file (%s); the conversation's history keeps it.]", whyNotKept)
		return b.String()
	}
	fmt.Fprintf(&b, "The result is kept whole in the workspace file %s", path)
	if len(images) > 0 {
		fmt.Fprintf(&b, ", and its images in %s", strings.Join(images, ", "))
	}
	b.WriteString(".]")
	return b.String()
}

// withheldText says what a guard's edit did, for people.
func withheldText(e history.Edit) string {
	t := e.Tally()
	where := "each kept whole in the workspace file its placeholder names"
	if t.InFiles < t.Results {
		where = fmt.Sprintf("%d of them kept whole in a workspace file", t.InFiles)
	}
	return fmt.Sprintf("the model refused to go on (stop reason %q) after reading a round's results; the refusal guard withheld the round's %s (%d characters; the tools have already run), %s, and sends the request once more",
		e.Refusal.Stop, plural(t.Results, "result", "results"), t.Chars, where)
}

// refusedAnswer is a refused answer as it is stored when it ends the turn:
// its text and reasoning, without its tool calls, which are not run.
func refusedAnswer(m history.Message) history.Message {
	if callsIn(m) == 0 {
		return m
	}
	parts := make([]history.Part, 0, len(m.Parts))
	for _, p := range m.Parts {
		if p.Type != history.ToolCallPart {
			parts = append(parts, p)
		}
	}
	m.Parts = parts
	return m
}

// plural is n and the noun, singular for 1.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
