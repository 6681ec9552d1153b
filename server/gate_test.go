package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/delegate"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider/providertest"
)

// storedPermission is the permission record stored with call id's result
// in conversation conv, failing the test when the result or its record
// is missing.
func storedPermission(t *testing.T, f *fixture, conv, id string) *permission.Record {
	t.Helper()
	status, body := f.do("GET", "/v1/conversations/"+conv+"/messages", "")
	var out struct {
		Messages []struct {
			Message history.Message
		}
	}
	mustJSON(t, body, &out)
	if status != 200 {
		t.Fatalf("messages: %d %s", status, body)
	}
	for _, m := range out.Messages {
		for _, p := range m.Message.Parts {
			if p.Type == history.ToolResultPart && p.CallID == id {
				if p.Permission == nil {
					t.Fatalf("the result of %s is served without its permission record: %+v", id, p)
				}
				return p.Permission
			}
		}
	}
	t.Fatalf("no result of %s among the messages served", id)
	return nil
}

// With the permission gate asking through the server (approval.Gate's
// Asker), a call the policy asks about waits for its approval event's
// answer: allow_session runs it and every later call of its rule in that
// conversation without asking (by "session"), but not in another
// conversation; a deny's reason reaches the model; each decision is
// stored with the call's result, served by GET …/messages, and carried
// by tool.finished.
func TestWithTheGateACallWaitsForItsApprovalAndItsDecisionIsStoredAndServed(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "one"},
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c2", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "two"},
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c3", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "three"},
	)
	f.srv.Agent.Gate = &approval.Gate{Asker: f.srv}
	id := f.newConversation()
	w := f.watch(id)

	// asked, with the call named, and allowed for the conversation
	f.startTurn(id, "one")
	evs := w.until(t, EventApproval)
	var ap approvalEvent
	mustJSON(t, evs[len(evs)-1].Data, &ap)
	if ap.CallID != "c1" || ap.Tool != "noop--run" || ap.Rule != "noop--run" || !strings.HasPrefix(ap.ID, "approval_") || ap.Reason == "" {
		t.Fatalf("the approval event %+v, want call c1 of noop--run, its rule and why", ap)
	}
	if status, body := f.do("POST", "/v1/conversations/"+id+"/approvals/"+ap.ID, `{"decision":"allow_session"}`); status != 200 {
		t.Fatalf("allow_session: %d %s", status, body)
	}
	var fin toolFinishedEvent
	decode(t, w.until(t, EventTurnFinished), EventToolFinished, &fin)
	if fin.Text != "ok" || fin.Permission == nil || fin.Permission.Decision != "allow" || fin.Permission.By != approval.ByPerson || fin.Permission.Answer != "allow_session" {
		t.Fatalf("tool.finished of the allowed call: %q %+v", fin.Text, fin.Permission)
	}
	if rec := storedPermission(t, f, id, "c1"); rec.Decision != "allow" || rec.By != approval.ByPerson || rec.Answer != "allow_session" || rec.At.IsZero() {
		t.Fatalf("the stored record of c1: %+v", rec)
	}

	// the next call of the rule in the conversation is not asked
	f.startTurn(id, "two")
	evs = w.until(t, EventTurnFinished)
	for _, e := range evs {
		if e.Type == EventApproval {
			t.Fatalf("a call allowed for the session was asked again: %s", e.Data)
		}
	}
	if rec := storedPermission(t, f, id, "c2"); rec.Decision != "allow" || rec.By != approval.BySession {
		t.Fatalf("the stored record of c2: %+v, want allowed by the session", rec)
	}

	// another conversation is another session: asked, and denied
	other := f.newConversation()
	ow := f.watch(other)
	f.startTurn(other, "three")
	evs = ow.until(t, EventApproval)
	mustJSON(t, evs[len(evs)-1].Data, &ap)
	if status, body := f.do("POST", "/v1/conversations/"+other+"/approvals/"+ap.ID, `{"decision":"deny","reason":"not here"}`); status != 200 {
		t.Fatalf("deny: %d %s", status, body)
	}
	decode(t, ow.until(t, EventTurnFinished), EventToolFinished, &fin)
	if !fin.IsError || !strings.Contains(fin.Text, "not here") || fin.Permission == nil || fin.Permission.Decision != "deny" {
		t.Fatalf("the denied call's result: %q %+v", fin.Text, fin.Permission)
	}
	if rec := storedPermission(t, f, other, "c3"); rec.Decision != "deny" || rec.By != approval.ByPerson || rec.Answer != "deny" || rec.Reason != "not here" {
		t.Fatalf("the stored record of c3: %+v", rec)
	}
	// the model read the denial and its reason
	if req, _ := json.Marshal(f.fake.Request(5)); !strings.Contains(string(req), "not here") {
		t.Fatalf("the request after the denial does not carry its reason")
	}
}

// A subagent's call the policy asks about is asked on the conversation
// whose turn runs it (the parent's, which its client watches), naming the
// call that runs it (the delegate's); answered there, the subagent goes
// on.
func TestASubagentsCallIsAskedOnTheParentsConversationNamingTheDelegateCall(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c_del", Name: delegate.Name, Input: `{"task":"run noop","tools":["noop--run"]}`}}},
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c_child", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "the child ran noop"},
		providertest.Step{Text: "done"},
	)
	f.withDelegate()
	allowDelegate, err := permission.ParseRule(delegate.Name, permission.Allow, "flag --allow")
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Agent.Gate = &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{allowDelegate}}, Asker: f.srv}
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "delegate")
	evs := w.until(t, EventApproval)
	var ap approvalEvent
	mustJSON(t, evs[len(evs)-1].Data, &ap)
	if ap.Tool != "noop--run" || ap.CallID != "c_del" {
		t.Fatalf("the subagent's approval: %+v, want noop--run named by the delegate call c_del", ap)
	}
	if status, body := f.do("POST", "/v1/conversations/"+id+"/approvals/"+ap.ID, `{"decision":"allow_once"}`); status != 200 {
		t.Fatalf("allow_once: %d %s", status, body)
	}
	var fin toolFinishedEvent
	decode(t, w.until(t, EventTurnFinished), EventToolFinished, &fin)
	if fin.CallID != "c_del" || !strings.Contains(fin.Text, "the child ran noop") {
		t.Fatalf("the delegate call's result: %+v", fin)
	}
}
