package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// asking is a tool that puts its own call to the server as an approval
// would (Server.Ask, with the call's context: its turn, its call id, its
// cancellation) and returns what it was answered: the Asker's side of
// what the gate does, without the gate.
func asking(srv *Server) *tool.Tool {
	return tool.MustFunc("ask--run", "Asks for its own approval.", func(ctx context.Context, in struct {
		Rule string `json:"rule,omitempty"`
	}) (any, error) {
		ans, err := srv.Ask(ctx, approval.Request{Tool: "shell--run", Input: json.RawMessage(`{"command":"go test ./... && rm -rf /tmp/x"}`),
			Command: "go test ./... && rm -rf /tmp/x", Part: "rm -rf /tmp/x", Reason: "shell--run is asked by default", Rule: in.Rule})
		return fmt.Sprintf("%s %q by=%s err=%v", ans.Choice, ans.Reason, ans.By, err), nil
	})
}

// newApprovalFixture is newFixture with the tool ask--run.
func newApprovalFixture(t *testing.T, steps ...providertest.Step) *fixture {
	t.Helper()
	f := newFixture(t, steps...)
	if err := f.srv.Agent.Tools.Add(asking(f.srv)); err != nil {
		t.Fatal(err)
	}
	return f
}

// callAsk is a turn that calls ask--run (whose approval names the rule
// "rm -rf /tmp/*"), then answers "done".
var callAsk = []providertest.Step{
	{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "ask--run", Input: `{"rule":"rm -rf /tmp/*"}`}}},
	{Text: "done"},
}

// approvalAsked is a turn of a new conversation of f started to call
// ask--run, up to its approval event.
type approvalAsked struct {
	id string
	w  *watcher
	ts TurnStarted
	ap approvalEvent
}

func (f *fixture) approvalAsked(t *testing.T) approvalAsked {
	t.Helper()
	var a approvalAsked
	a.id = f.newConversation()
	a.w = f.watch(a.id)
	a.ts = f.startTurn(a.id, "clean up")
	evs := a.w.until(t, EventApproval)
	mustJSON(t, evs[len(evs)-1].Data, &a.ap)
	return a
}

func TestAnApprovalIsAnEventTheClientAnswersAndTheCallGetsTheDecision(t *testing.T) {
	f := newApprovalFixture(t, callAsk...)
	a := f.approvalAsked(t)
	ap := a.ap
	if ap.Turn != a.ts.Turn || ap.CallID != "c1" || ap.Tool != "shell--run" || ap.Command != "go test ./... && rm -rf /tmp/x" || ap.Part != "rm -rf /tmp/x" ||
		ap.Rule != "rm -rf /tmp/*" || ap.Reason != "shell--run is asked by default" || string(ap.Input) != `{"command":"go test ./... && rm -rf /tmp/x"}` {
		t.Fatalf("the approval event does not carry the call: %+v", ap)
	}
	if strings.Join(ap.Decisions, ",") != "allow_once,allow_session,deny" || ap.TimeoutMS != DefaultApprovalTimeout.Milliseconds() || !strings.HasPrefix(ap.ID, "approval_") {
		t.Fatalf("the approval event's id, decisions or timeout: %+v", ap)
	}
	// a client that comes late finds it pending
	status, body := f.do("GET", "/v1/conversations/"+a.id+"/approvals", "")
	var listed struct{ Approvals []approvalEvent }
	mustJSON(t, body, &listed)
	if status != 200 || len(listed.Approvals) != 1 || listed.Approvals[0].ID != ap.ID || listed.Approvals[0].CallID != "c1" {
		t.Fatalf("pending approvals: %d %s", status, body)
	}
	if status, body := f.do("GET", "/v1/conversations/conv_none/approvals", ""); status != http.StatusNotFound {
		t.Errorf("the approvals of an unknown conversation: %d %s", status, body)
	}

	path := "/v1/conversations/" + a.id + "/approvals/" + ap.ID
	for _, bad := range []struct{ body, want string }{
		{`{}`, `an answer needs its decision`},
		{`{"decision":"yes"}`, `decision "yes": want allow_once, allow_session or deny`},
		{`{"decision":"allow_always"}`, `allow_always is the terminal's answer`},
		{`{"decision":"allow_once","reason":"fine"}`, `a reason goes with deny only`},
		{`{"decision":"deny","reason":"` + strings.Repeat("x", maxDenyReason+1) + `"}`, `over the 4096 a deny's reason may have`},
		{`{"decision":"deny","why":"no"}`, `unknown field "why"`},
		{`{"decision":"deny"}{}`, `more than one JSON value`},
	} {
		status, body := f.do("POST", path, bad.body)
		var e apiError
		mustJSON(t, body, &e)
		if status != http.StatusBadRequest || !strings.Contains(e.Error.Message, bad.want) {
			t.Errorf("%.80s: %d %.200s, want 400 saying %q", bad.body, status, body, bad.want)
		}
	}
	for _, other := range []string{"/v1/conversations/" + a.id + "/approvals/approval_none", "/v1/conversations/conv_other/approvals/" + ap.ID} {
		if status, body := f.do("POST", other, `{"decision":"deny"}`); status != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", other, status, body)
		}
	}
	status, body = f.do("POST", path, `{"decision":"allow_session"}`)
	var answered ApprovalAnswered
	mustJSON(t, body, &answered)
	if status != 200 || answered.ID != ap.ID || answered.Decision != "allow_session" || answered.Rule != "rm -rf /tmp/*" {
		t.Fatalf("answer: %d %s", status, body)
	}
	rest := a.w.until(t, EventTurnFinished)
	var ended approvalEndedEvent
	var result toolFinishedEvent
	decode(t, rest, EventApprovalAnswered, &ended)
	decode(t, rest, EventToolFinished, &result)
	if ended.ID != ap.ID || ended.CallID != "c1" || ended.Decision != "allow_session" || ended.Rule != "rm -rf /tmp/*" {
		t.Fatalf("approval.answered %+v", ended)
	}
	if result.Text != `allow_session "" by=api err=<nil>` {
		t.Fatalf("the call was answered %q", result.Text)
	}
	if status, body := f.do("POST", path, `{"decision":"deny"}`); status != http.StatusConflict || !strings.Contains(string(body), "answered already (allow_session)") {
		t.Errorf("a second answer: %d %s", status, body)
	}
	if _, body := f.do("GET", "/v1/conversations/"+a.id+"/approvals", ""); strings.Contains(string(body), ap.ID) {
		t.Errorf("an answered approval is listed as pending: %s", body)
	}
}

// A deny's reason goes to the call (and so to the model); an approval
// whose call no rule covers beyond itself takes allow_once and deny only.
func TestADeniedApprovalCarriesItsReasonAndOneWithoutARuleIsNotAllowedForTheSession(t *testing.T) {
	f := newApprovalFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "ask--run", Input: `{}`}}},
		providertest.Step{Text: "done"},
	)
	a := f.approvalAsked(t)
	if a.ap.Rule != "" || strings.Join(a.ap.Decisions, ",") != "allow_once,deny" {
		t.Fatalf("an approval without a rule offers %v (rule %q)", a.ap.Decisions, a.ap.Rule)
	}
	path := "/v1/conversations/" + a.id + "/approvals/" + a.ap.ID
	if status, body := f.do("POST", path, `{"decision":"allow_session"}`); status != http.StatusBadRequest || !strings.Contains(string(body), "can be allowed once only") {
		t.Fatalf("allow_session without a rule: %d %s", status, body)
	}
	if status, body := f.do("POST", path, `{"decision":"deny","reason":"not in /tmp, please"}`); status != 200 {
		t.Fatalf("deny: %d %s", status, body)
	}
	rest := a.w.until(t, EventTurnFinished)
	var ended approvalEndedEvent
	var result toolFinishedEvent
	decode(t, rest, EventApprovalAnswered, &ended)
	decode(t, rest, EventToolFinished, &result)
	if ended.Decision != "deny" || ended.Reason != "not in /tmp, please" || ended.Rule != "" {
		t.Fatalf("approval.answered %+v", ended)
	}
	if result.Text != `deny "not in /tmp, please" by=api err=<nil>` {
		t.Fatalf("the call was answered %q", result.Text)
	}
}

func TestAnApprovalNobodyAnswersIsDeniedAtTheTimeoutAndALateAnswerIs409(t *testing.T) {
	f := newApprovalFixture(t, callAsk...)
	f.srv.ApprovalTimeout = time.Millisecond
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "clean up")
	evs := w.until(t, EventTurnFinished)
	var ap approvalEvent
	var expired approvalEndedEvent
	var result toolFinishedEvent
	decode(t, evs, EventApproval, &ap)
	decode(t, evs, EventApprovalExpired, &expired)
	decode(t, evs, EventToolFinished, &result)
	if ap.TimeoutMS != 1 {
		t.Errorf("the approval says it waits %d ms, want 1", ap.TimeoutMS)
	}
	if expired.ID != ap.ID || expired.CallID != "c1" || expired.Decision != "deny" || !strings.Contains(expired.Reason, "no answer within 1ms") {
		t.Fatalf("approval.expired %+v", expired)
	}
	if !strings.HasPrefix(result.Text, "deny ") || !strings.Contains(result.Text, approval.ErrExpired.Error()) {
		t.Fatalf("the call was answered %q, want a denial with approval.ErrExpired", result.Text)
	}
	status, body := f.do("POST", "/v1/conversations/"+id+"/approvals/"+ap.ID, `{"decision":"allow_once"}`)
	if status != http.StatusConflict || !strings.Contains(string(body), "has ended: no answer within 1ms") || !strings.Contains(string(body), "the call was denied") {
		t.Fatalf("a late answer: %d %s", status, body)
	}
	if _, body := f.do("GET", "/v1/conversations/"+id+"/approvals", ""); strings.Contains(string(body), ap.ID) {
		t.Fatalf("an expired approval is listed as pending: %s", body)
	}
}

// A turn cancelled while its call waits for approval ends the wait: the
// call is denied with the turn's cause, and the turn ends cancelled.
func TestAnApprovalWhoseTurnIsCancelledEndsAndIsDenied(t *testing.T) {
	f := newApprovalFixture(t, callAsk...)
	a := f.approvalAsked(t)
	if status, body := f.do("POST", "/v1/conversations/"+a.id+"/turns/"+a.ts.Turn+"/cancel", ""); status != 200 {
		t.Fatalf("cancel: %d %s", status, body)
	}
	evs := a.w.until(t, EventTurnFinished)
	var expired approvalEndedEvent
	var fin turnFinishedEvent
	decode(t, evs, EventApprovalExpired, &expired)
	decode(t, evs, EventTurnFinished, &fin)
	if expired.ID != a.ap.ID || expired.Decision != "deny" || !strings.Contains(expired.Reason, "the turn ended before an answer came: "+errCancelled.Error()) {
		t.Fatalf("approval.expired %+v", expired)
	}
	if fin.Reason != "cancelled" {
		t.Fatalf("the turn ended %q, want cancelled", fin.Reason)
	}
	if status, body := f.do("POST", "/v1/conversations/"+a.id+"/approvals/"+a.ap.ID, `{"decision":"allow_once"}`); status != http.StatusConflict || !strings.Contains(string(body), "the turn ended") {
		t.Fatalf("an answer after the cancel: %d %s", status, body)
	}
}

func TestAnApprovalOutsideAnyConversationHasNoOneToAsk(t *testing.T) {
	f := newFixture(t)
	ans, err := f.srv.Ask(context.Background(), approval.Request{Tool: "shell--run"})
	if !errors.Is(err, approval.ErrNoOne) || ans.Choice == approval.AllowOnce || ans.Choice == approval.AllowSession {
		t.Fatalf("answered %+v, %v; want approval.ErrNoOne", ans, err)
	}
}

// With a shared event log (serve --worker), a decision posted to another
// process than the one waiting reaches it through the log, checked
// against the approval's event there; the other process lists it while
// it waits; a second answer, to either, is a 409. An allow_session
// answered on one process holds for the conversation on the other.
func TestAnApprovalIsAnsweredThroughAnotherProcessSharingTheEvents(t *testing.T) {
	f := newApprovalFixture(t, callAsk...)
	shared := newMemoryEvents(0, 0, 0)
	f.srv.Events = shared
	other := &Server{Agent: f.srv.Agent, Workspace: f.srv.Workspace, Events: shared}
	hs := httptest.NewServer(other)
	t.Cleanup(func() { other.Close(); hs.Close() })
	a := f.approvalAsked(t)
	post := func(base, body string) (int, string) {
		return postTo(t, base+"/v1/conversations/"+a.id+"/approvals/"+a.ap.ID, body)
	}
	resp, err := http.Get(hs.URL + "/v1/conversations/" + a.id + "/approvals")
	if err != nil {
		t.Fatal(err)
	}
	var listed struct{ Approvals []approvalEvent }
	json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if len(listed.Approvals) != 1 || listed.Approvals[0].ID != a.ap.ID || listed.Approvals[0].TimeoutMS <= 0 || listed.Approvals[0].TimeoutMS > a.ap.TimeoutMS {
		t.Fatalf("the other process lists %+v, want the approval waiting on the first", listed.Approvals)
	}
	if status, body := post(hs.URL, `{"decision":"allow_once","reason":"x"}`); status != http.StatusBadRequest || !strings.Contains(body, "a reason goes with deny only") {
		t.Fatalf("a bad answer to the other process: %d %s", status, body)
	}
	if status, body := post(hs.URL, `{"decision":"allow_session"}`); status != 200 || !strings.Contains(body, `"rule":"rm -rf /tmp/*"`) {
		t.Fatalf("the answer to the other process: %d %s", status, body)
	}
	var result toolFinishedEvent
	decode(t, a.w.until(t, EventTurnFinished), EventToolFinished, &result)
	if result.Text != `allow_session "" by=api err=<nil>` {
		t.Fatalf("the call was answered %q", result.Text)
	}
	for _, base := range []string{hs.URL, f.http.URL} {
		if status, body := post(base, `{"decision":"deny"}`); status != http.StatusConflict || !strings.Contains(body, "answered already") {
			t.Errorf("a second answer to %s: %d %s", base, status, body)
		}
	}
	if status, body := postTo(t, hs.URL+"/v1/conversations/"+a.id+"/approvals/approval_none", `{"decision":"deny"}`); status != http.StatusNotFound {
		t.Errorf("an unknown approval: %d %s", status, body)
	}

	// the other process, which never saw the answer, is asked for a call
	// of the same rule in that conversation: the session allows it
	// (bounded, so that a failure is not a wait of the default timeout)
	bound, cancel := context.WithTimeout(turnContext(context.Background(), a.id, "turn_other", nil), 10*time.Second)
	defer cancel()
	ans, err := other.Ask(bound, approval.Request{Tool: "shell--run", Rule: "rm -rf /tmp/*"})
	if err != nil || ans.Choice != approval.AllowSession || ans.By != "session" {
		t.Fatalf("a call of the rule allowed for the session, asked on the other process: %+v, %v", ans, err)
	}
	// another rule is still asked
	short := &Server{Agent: f.srv.Agent, Workspace: f.srv.Workspace, Events: shared, ApprovalTimeout: time.Millisecond}
	defer short.Close()
	if ans, err := short.Ask(turnContext(context.Background(), a.id, "turn_other", nil), approval.Request{Tool: "shell--run", Rule: "rm -rf /home/*"}); !errors.Is(err, approval.ErrExpired) {
		t.Fatalf("a call of another rule: %+v, %v; want it asked (and expired)", ans, err)
	}
}

// A wait ended by the call's context returns the context's error, as a
// tool.Gate must (the call is then cancelled, no decision stored), with
// its cause.
func TestAnApprovalEndedByItsContextReturnsTheContextsErrorAndCause(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancelCause(turnContext(context.Background(), "conv_x", "turn_x", nil))
	cancel(errCancelled)
	_, err := f.srv.Ask(ctx, approval.Request{Tool: "shell--run"})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errCancelled) {
		t.Fatalf("Ask under a cancelled context returned %v; want context.Canceled and the cause", err)
	}
}

// A call that waited for approval when its process died (its approval
// event in the shared log, the call stored without a result) is answered
// interrupted by the conversation's next turn, and never run; the
// approval is no longer listed, and an answer to it is a 409 saying its
// turn is gone.
func TestACallWaitingForApprovalWhenItsProcessDiedIsAnsweredInterruptedAndNeverRun(t *testing.T) {
	f := newApprovalFixture(t, providertest.Step{Text: "starting over"})
	ran := 0
	// a tool that says running it again is harmless, which the policy
	// asks about: recovery asks no one, so it is not run again
	clean := tool.MustFunc("clean--run", "Cleans.", func(context.Context, struct{}) (any, error) { ran++; return "cleaned", nil })
	clean.Rerun = true
	if err := f.srv.Agent.Tools.Add(clean); err != nil {
		t.Fatal(err)
	}
	f.srv.Agent.Gate = &approval.Gate{Asker: f.srv}
	f.srv.Events = newMemoryEvents(0, 0, 0) // shared: it outlives the process that died
	id := f.newConversation()
	ctx := context.Background()
	if err := f.store.Append(ctx, id,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "clean up"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "c1", Name: "clean--run", Input: json.RawMessage(`{}`)}}},
	); err != nil {
		t.Fatal(err)
	}
	// what the process that died had emitted: the call's approval
	dead := newAsk(kindApproval, "approval_dead", id, "turn_dead", time.Hour)
	dead.req, dead.call = approval.Request{Tool: "clean--run", Input: json.RawMessage(`{}`)}, "c1"
	f.srv.emit(id, EventApproval, approvalEventOf(dead, time.Now()))
	// and an MCP server's question of another call: the same holds for it
	f.srv.emit(id, EventElicitation, elicitationEvent{ID: "elicit_dead", Server: "s", Message: "?", Mode: "url", URL: "https://example.test", TimeoutMS: 1, Expires: dead.expires.UTC().Format(time.RFC3339Nano)})
	if _, body := f.do("GET", "/v1/conversations/"+id+"/approvals", ""); !strings.Contains(string(body), "approval_dead") {
		t.Fatalf("before any turn starts, the approval is not listed: %s", body)
	}

	w := f.watch(id)
	f.startTurn(id, "go on")
	evs := w.until(t, EventTurnFinished)
	for _, e := range evs {
		if e.Type == EventApproval && !strings.Contains(string(e.Data), "approval_dead") {
			t.Fatalf("the recovered call was asked about again: %s", e.Data)
		}
	}
	if ran != 0 {
		t.Fatalf("the call that waited for approval ran %d time(s) on recovery", ran)
	}
	msgs, err := f.store.Messages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var answered *history.Part
	for _, m := range msgs {
		for i, p := range m.Parts {
			if p.Type == history.ToolResultPart && p.CallID == "c1" {
				answered = &m.Parts[i]
			}
		}
	}
	if answered == nil || !answered.IsError || !strings.Contains(answered.Text, "interrupted") {
		t.Fatalf("the call is answered %+v, want an error saying it was interrupted", answered)
	}
	if rec := answered.Permission; rec == nil || rec.Decision != "deny" || rec.By != approval.ByNobody {
		t.Fatalf("the recovered call's record %+v, want denied by nobody (no one is asked at recovery)", rec)
	}
	if _, body := f.do("GET", "/v1/conversations/"+id+"/approvals", ""); strings.Contains(string(body), "approval_dead") {
		t.Fatalf("the dead process's approval is listed after a turn started: %s", body)
	}
	status, body := f.do("POST", "/v1/conversations/"+id+"/approvals/approval_dead", `{"decision":"allow_once"}`)
	if status != http.StatusConflict || !strings.Contains(string(body), "a turn of the conversation started after it") {
		t.Fatalf("an answer to the dead process's approval: %d %s, want 409", status, body)
	}
	if _, body := f.do("GET", "/v1/conversations/"+id+"/elicitations", ""); strings.Contains(string(body), "elicit_dead") {
		t.Fatalf("the dead process's elicitation is listed after a turn started: %s", body)
	}
	status, body = f.do("POST", "/v1/conversations/"+id+"/elicitations/elicit_dead", `{"action":"accept"}`)
	if status != http.StatusConflict || !strings.Contains(string(body), "a turn of the conversation started after it") {
		t.Fatalf("an answer to the dead process's elicitation: %d %s, want 409", status, body)
	}
}
