package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
)

// showMessages writes a conversation as `history show` prints it: each
// stored message and Context record under a numbered header, in order,
// numbered from 1 as they are stored. A Context record is rendered where it
// stands, since it changes the requests from its place on (contract §12);
// the results and inputs a later Edit cleared say so beside them, naming
// the record, so that a reader of an old round sees it was not sent whole
// any more; the decision the permission policy (or a person) made on a
// call is a line over its result (permissionText); the Settings
// stored with an answer are one line under it. It
// prints what is stored and converts nothing.
func showMessages(w io.Writer, msgs []history.Message) { showConversation(w, msgs, nil, nil) }

// showConversation is showMessages naming, under each tool call that
// started a subagent, the subagent's conversation: children holds them
// by the call's id, in the order they were made (history.Children). With
// costs, each request's cost follows its usage, each turn's cost ends
// it, and the conversation's ends all (docs/cost.md).
func showConversation(w io.Writer, msgs []history.Message, children map[string][]string, costs *shownCosts) {
	cleared := clearedAt(msgs)
	started := map[string]int{} // the calls of each id seen so far: an id may repeat
	child := func(callID string) string {
		kids := children[callID]
		n := started[callID]
		started[callID]++
		if n < len(kids) {
			return kids[n]
		}
		return ""
	}
	prompt := -1 // the prompt of the turn being shown
	for i, m := range msgs {
		if costs.turnStarts(i) {
			costs.turnLine(w, prompt)
			prompt = i
		}
		fmt.Fprintf(w, "── %d %s  %s\n", i+1, m.Role, m.Time.Local().Format(time.DateTime))
		if m.IsRecord() {
			showRecord(w, m, costs.requestCost(i, "refusal"), costs.requestCost(i, "summary"))
			continue
		}
		for _, p := range m.Parts {
			switch p.Type {
			case history.TextPart:
				fmt.Fprintf(w, "%s\n", p.Text)
			case history.ToolCallPart:
				in := string(p.Input)
				if in == "" {
					in = p.Text + "  (not JSON)"
				}
				mark := ""
				if n := cleared[clearKey{i, p.CallID, true}]; n > 0 {
					mark = fmt.Sprintf("  (input cleared from requests at message %d)", n)
				}
				fmt.Fprintf(w, "[tool call %s] %s %s%s\n", p.CallID, p.Name, in, mark)
				if id := child(p.CallID); id != "" {
					fmt.Fprintf(w, "[subagent: conversation %s; myelin history show %s]\n", id, id)
				}
			case history.ToolResultPart:
				flag := ""
				if p.IsError {
					flag = " error"
				}
				if p.SpillPath != "" {
					flag += ", whole result in " + p.SpillPath
				}
				if n := cleared[clearKey{i, p.CallID, false}]; n > 0 && msgs[n-1].Edit.Refusal != nil {
					flag += fmt.Sprintf(", withheld from requests after a refusal at message %d", n)
				} else if n > 0 {
					flag += fmt.Sprintf(", cleared from requests at message %d", n)
				}
				if p.Permission != nil {
					fmt.Fprintln(w, permissionText(*p.Permission))
				}
				fmt.Fprintf(w, "[tool result %s%s]\n%s\n", p.CallID, flag, p.Text)
			case history.ReasoningPart:
				fmt.Fprintln(w, reasoningText(p))
			}
		}
		if u := m.Usage; u != nil {
			fmt.Fprintf(w, "[usage: %s%s]\n", usageText(*u), costs.requestCost(i, "answer"))
		}
		if st := m.Settings; st != nil {
			fmt.Fprintln(w, settingsText(*st))
		}
	}
	costs.turnLine(w, prompt)
	costs.total(w)
}

// reasoningText is a reasoning part as history show prints it, marked:
// "[thinking] " and its text, "[redacted thinking]" for a block the
// provider encrypted, "[thinking omitted by the provider]" for one whose
// text it did not send; another wire's reasoning names its wire. The
// signature and encrypted content are not printed.
func reasoningText(p history.Part) string {
	label := "thinking"
	if p.Wire != "" && p.Wire != "anthropic" {
		label = "reasoning, " + p.Wire
	}
	if p.Text != "" {
		return "[" + label + "] " + p.Text
	}
	var raw struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(p.Raw, &raw)
	if raw.Type == "redacted_thinking" {
		return "[redacted thinking]"
	}
	return fmt.Sprintf("[%s omitted by the provider; %s kept to send back]", label, plural(len(p.Raw), "byte", "bytes"))
}

// settingsText is the one line of the Settings stored with an answer: what
// its request, and the later ones until the next Settings, were sent with.
func settingsText(s history.Settings) string {
	cache := s.Cache
	if cache == "" {
		cache = "not said"
	}
	if s.CacheTTL != "" {
		cache += ", cache lifetime " + s.CacheTTL // the default's is not stored
	}
	return fmt.Sprintf("[sent from this request on with: model %s, system prompt sha256 %s, tools sha256 %s, cache %s]", s.Model, shortHash(s.System), shortHash(s.Tools), cache)
}

// clearKey names what an Edit cleared: a call's result, or its input, in
// stored message msg (call ids alone may repeat across rounds).
type clearKey struct {
	msg    int
	callID string
	input  bool
}

// clearedAt maps each result and input an Edit cleared to the number of
// the first record that cleared it.
func clearedAt(msgs []history.Message) map[clearKey]int {
	at := map[clearKey]int{}
	for i, m := range msgs {
		if !m.IsRecord() || m.Edit == nil {
			continue
		}
		for _, c := range m.Edit.Cleared {
			k := clearKey{c.Msg, c.CallID, c.Input}
			if at[k] == 0 {
				at[k] = i + 1
			}
		}
	}
	return at
}

// showRecord writes a Context record's body: what its Edit took out of
// requests (or withheld after a refusal, with the refused answer) and what
// its summary stands for. refusedCost and summaryCost ("; cost …", or "")
// are what its refused answer's and its summary's requests cost, said
// after their usage.
func showRecord(w io.Writer, m history.Message, refusedCost, summaryCost string) {
	e := m.Edit
	if e == nil {
		fmt.Fprintln(w, "[a context record with no edit]")
		return
	}
	if len(e.Cleared) > 0 {
		t := e.Tally()
		var what []string
		if t.Results > 0 {
			what = append(what, plural(t.Results, "result", "results"))
		}
		if t.Inputs > 0 {
			what = append(what, plural(t.Inputs, "tool call input", "tool call inputs"))
		}
		where := "each whole in its workspace file"
		if t.InFiles < len(e.Cleared) {
			where = fmt.Sprintf("%d of them whole in a workspace file", t.InFiles)
		}
		done := "cleared from requests from here on"
		if e.Refusal != nil {
			done = "withheld from requests from here on after a refusal (the refusal guard)"
		}
		fmt.Fprintf(w, "[%s: %s, %s characters; %s]\n", done, strings.Join(what, " and "), thousands(t.Chars), where)
		for _, c := range e.Cleared {
			kind := "result"
			if c.Input {
				kind = "input"
			}
			line := fmt.Sprintf("  %s  %-6s  %s chars", c.CallID, kind, thousands(c.Chars))
			if c.Images > 0 {
				line += ", " + plural(c.Images, "image", "images")
			}
			if c.Path != "" {
				line += "  " + c.Path
			} else {
				line += "  not in a file: " + oneLine(c.Text, 100)
			}
			fmt.Fprintln(w, line)
		}
	}
	if r := e.Refusal; r != nil {
		fmt.Fprintf(w, "[the refused answer, stop reason %q, never sent:]\n%s\n", r.Stop, r.Text)
		if r.Usage != nil {
			fmt.Fprintf(w, "[usage of the refused request: %s%s]\n", usageText(*r.Usage), refusedCost)
		}
	}
	if s := e.Summary; s != nil {
		span := "no messages"
		if s.Through >= 1 {
			span = fmt.Sprintf("messages 1-%d", s.Through)
		}
		fmt.Fprintf(w, "[summary standing for %s in requests from here on]\n%s\n", span, s.Text)
		if s.Usage != nil {
			fmt.Fprintf(w, "[usage of the summary's request: %s%s]\n", usageText(*s.Usage), summaryCost)
		}
	}
	var why []string
	if e.Why != "" {
		why = append(why, e.Why)
	}
	if e.Before > 0 || e.After > 0 {
		why = append(why, fmt.Sprintf("the next request estimated at %s tokens before, %s after", thousands(e.Before), thousands(e.After)))
	}
	if len(why) > 0 {
		fmt.Fprintf(w, "[why: %s]\n", strings.Join(why, "; "))
	}
}

// usageText is one request's usage as history show prints it.
func usageText(u history.Usage) string {
	written := fmt.Sprintf("%d cache-written", u.CacheWrite)
	if u.CacheWrite1h > 0 {
		written += fmt.Sprintf(" (%d of them for an hour)", u.CacheWrite1h)
	}
	return fmt.Sprintf("%d input, %d cached, %s, %d output", u.Input, u.CacheRead, written, u.Output)
}

// shortHash is the first 12 hex digits of a SHA-256 in hex, enough to tell
// two apart; "none" when empty.
func shortHash(h string) string {
	switch {
	case h == "":
		return "none"
	case len(h) > 12:
		return h[:12] + "…"
	}
	return h
}

// plural is n and the noun, singular for 1.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(n) + " " + many
}
