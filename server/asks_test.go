package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// newAskFixture is newFixture with mcptest.Asker connected over loopback
// HTTP as the MCP server "asker", whose elicitations and sampling
// requests go to the server under test (it may sample 5 times).
func newAskFixture(t *testing.T, steps ...providertest.Step) *fixture {
	t.Helper()
	f := newFixture(t, steps...)
	hs := httptest.NewServer(mcptest.Asker())
	set := mcp.Start(context.Background(), []mcp.Server{{Name: "asker", Type: "http", URL: hs.URL,
		Sampling: &mcp.SamplingBudget{Requests: 5, Tokens: 10_000}}},
		mcp.Options{Dir: t.TempDir(), Elicitor: f.srv, Sampler: f.srv})
	t.Cleanup(func() { set.Close(); hs.Close() }) // before the fixture's cleanup: the server first
	if errs := set.Failures(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := f.srv.Agent.Tools.Add(set.Tools()...); err != nil {
		t.Fatal(err)
	}
	return f
}

// callElicit is a turn that calls asker--elicit, then answers "thanks".
var callElicit = []providertest.Step{
	{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "asker--elicit", Input: `{}`}}},
	{Text: "thanks"},
}

// asked is a turn of a new conversation of f started to call
// asker--elicit, up to its elicitation event.
type asked struct {
	id string // the conversation
	w  *watcher
	ts TurnStarted
	el elicitationEvent
}

func (f *fixture) asked(t *testing.T) asked {
	t.Helper()
	var a asked
	a.id = f.newConversation()
	a.w = f.watch(a.id)
	a.ts = f.startTurn(a.id, "who am I?")
	evs := a.w.until(t, EventElicitation)
	mustJSON(t, evs[len(evs)-1].Data, &a.el)
	return a
}

func TestAnElicitationIsAnEventTheClientAnswersWithTheFormsContent(t *testing.T) {
	f := newAskFixture(t, callElicit...)
	a := f.asked(t)
	id, w, ts, el := a.id, a.w, a.ts, a.el
	if el.Turn != ts.Turn || el.Server != "asker" || el.Message != "Who are you?" || el.Mode != "form" || el.TimeoutMS != DefaultElicitTimeout.Milliseconds() {
		t.Fatalf("elicitation event %+v", el)
	}
	var names []string
	for _, fl := range el.Fields {
		names = append(names, fl.Name)
	}
	if strings.Join(names, ",") != "age,color,name,verified" || !el.Fields[0].Required || el.Fields[0].Type != "integer" || el.Fields[2].Default != "Ann" {
		t.Fatalf("fields %+v", el.Fields)
	}
	// a client that comes late finds it pending
	status, body := f.do("GET", "/v1/conversations/"+id+"/elicitations", "")
	if status != 200 || !strings.Contains(string(body), el.ID) {
		t.Fatalf("pending elicitations: %d %s", status, body)
	}

	path := "/v1/conversations/" + id + "/elicitations/" + el.ID
	for _, bad := range []struct{ body, want string }{
		{`{"action":"accept","content":{"color":"red"}}`, `field "age" is required`},
		{`{"action":"accept","content":{"age":"thirty"}}`, `field "age": "thirty" is not a number`},
		{`{"action":"accept","content":{"age":30,"nick":"x"}}`, `the form has no field "nick"`},
		{`{"action":"decline","content":{"age":30}}`, `decline takes no content`},
		{`{"action":"maybe"}`, `action "maybe": want accept, decline or cancel`},
		{`{}`, `an answer needs its action`},
		{`{"action":"accept","extra":1}`, `unknown field "extra"`},
	} {
		status, body := f.do("POST", path, bad.body)
		var e apiError
		mustJSON(t, body, &e)
		if status != http.StatusBadRequest || !strings.Contains(e.Error.Message, bad.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", bad.body, status, body, bad.want)
		}
	}
	if status, body := f.do("POST", "/v1/conversations/"+id+"/elicitations/elicit_none", `{"action":"decline"}`); status != http.StatusNotFound {
		t.Errorf("an unknown elicitation: %d %s", status, body)
	}
	status, body = f.do("POST", path, `{"action":"accept","content":{"age":30,"color":"red"}}`)
	if status != 200 || !strings.Contains(string(body), `"name":"Ann"`) {
		t.Fatalf("answer: %d %s", status, body)
	}
	rest := w.until(t, EventTurnFinished)
	var answered elicitationEndedEvent
	var result toolFinishedEvent
	decode(t, rest, EventElicitationAnswered, &answered)
	decode(t, rest, EventToolFinished, &result)
	if answered.ID != el.ID || answered.Action != "accept" {
		t.Fatalf("elicitation.answered %+v", answered)
	}
	if result.Text != `accept {"age":30,"color":"red","name":"Ann","verified":true}` {
		t.Fatalf("the server got %q", result.Text)
	}
	if status, body := f.do("POST", path, `{"action":"decline"}`); status != http.StatusConflict || !strings.Contains(string(body), "answered already") {
		t.Errorf("a second answer: %d %s", status, body)
	}
}

func TestADeclinedElicitationSendsTheServerDecline(t *testing.T) {
	f := newAskFixture(t, callElicit...)
	a := f.asked(t)
	id, w, el := a.id, a.w, a.el
	if status, body := f.do("POST", "/v1/conversations/"+id+"/elicitations/"+el.ID, `{"action":"decline"}`); status != 200 {
		t.Fatalf("decline: %d %s", status, body)
	}
	var result toolFinishedEvent
	decode(t, w.until(t, EventTurnFinished), EventToolFinished, &result)
	if result.Text != "decline null" {
		t.Fatalf("the server got %q", result.Text)
	}
}

func TestAnElicitationNobodyAnswersIsDeclinedAtTheTimeoutAndALateAnswerIs409(t *testing.T) {
	f := newAskFixture(t, callElicit...)
	f.srv.ElicitTimeout = time.Millisecond
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "who am I?")
	evs := w.until(t, EventTurnFinished)
	var el elicitationEvent
	var expired elicitationEndedEvent
	var result toolFinishedEvent
	decode(t, evs, EventElicitation, &el)
	decode(t, evs, EventElicitationExpired, &expired)
	decode(t, evs, EventToolFinished, &result)
	if expired.ID != el.ID || expired.Action != "decline" || !strings.Contains(expired.Reason, "no answer within 1ms") {
		t.Fatalf("elicitation.expired %+v", expired)
	}
	if result.Text != "decline null" {
		t.Fatalf("the server got %q", result.Text)
	}
	status, body := f.do("POST", "/v1/conversations/"+id+"/elicitations/"+el.ID, `{"action":"accept","content":{"age":1}}`)
	if status != http.StatusConflict || !strings.Contains(string(body), "has ended: no answer within") {
		t.Fatalf("a late answer: %d %s", status, body)
	}
	if _, body := f.do("GET", "/v1/conversations/"+id+"/elicitations", ""); strings.Contains(string(body), el.ID) {
		t.Fatalf("an expired elicitation is listed as pending: %s", body)
	}
}

func TestAnElicitationOutsideAnyCallOfAConversationIsDeclined(t *testing.T) {
	f := newFixture(t)
	var logged []string
	f.srv.Log = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	a, err := f.srv.Elicit(context.Background(), &mcp.Elicitation{Server: "x", Message: "hi", Mode: "form"})
	if err != nil || a.Action != "decline" {
		t.Fatalf("answered %+v, %v", a, err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "declined: it asked outside any call of a conversation") {
		t.Fatalf("logged %q", logged)
	}
}

func TestASampleGoesToTheTurnsModelAndIsEmitted(t *testing.T) {
	f := newAskFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "asker--sample", Input: `{}`}}},
		providertest.Step{Text: "hi there", Input: 7, Output: 3},
		providertest.Step{Text: "done"},
	)
	id := f.newConversation()
	w := f.watch(id)
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"go","model":"claude-other"}`)
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %s", status, body)
	}
	var asked samplingEvent
	var fin samplingFinishedEvent
	var result toolFinishedEvent
	evs := w.until(t, EventTurnFinished)
	decode(t, evs, EventSampling, &asked)
	decode(t, evs, EventSamplingFinished, &fin)
	decode(t, evs, EventToolFinished, &result)
	if asked.Server != "asker" || asked.Model != "claude-other" || asked.System != "be brief" || asked.MaxTokens != 100 || len(asked.Messages) != 1 || asked.Messages[0].Text != "say hi" {
		t.Fatalf("sampling event %+v", asked)
	}
	if fin.ID != asked.ID || fin.Text != "hi there" || fin.Tokens != 10 || fin.Error != "" {
		t.Fatalf("sampling.finished %+v", fin)
	}
	if result.Text != "claude-other: hi there" {
		t.Fatalf("the server got %q", result.Text)
	}
	// the sample is one request of its own, and not in the conversation
	sample := f.fake.Request(1)
	if sample["model"] != "claude-other" || sample["tools"] != nil {
		t.Fatalf("the sampling request: %v", sample)
	}
	if msgs, _ := f.store.Messages(context.Background(), id); len(msgs) != 4 {
		t.Fatalf("%d messages stored, want the turn's 4", len(msgs))
	}
}

// TestNewToolsAreOfferedFromTheNextTurnNeverMidTurn pins serve's
// tools/list_changed rule: the set Server.Tools gives changes during a
// turn (its call changes it), and that turn's next request keeps the old
// list; the conversation's next turn offers the new one, with a notice.
func TestNewToolsAreOfferedFromTheNextTurnNeverMidTurn(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "grow--run", Input: `{}`}}},
		providertest.Step{Text: "grew"},
		providertest.Step{Text: "second turn"},
	)
	old := f.srv.Agent.Tools
	grown := &tool.Registry{}
	if err := grown.Add(append(old.Tools(), tool.MustFunc("grown--run", "Was added.", func(context.Context, struct{}) (any, error) { return "new", nil }))...); err != nil {
		t.Fatal(err)
	}
	current := old
	grow := tool.MustFunc("grow--run", "Adds a tool.", func(context.Context, struct{}) (any, error) { current = grown; return "grew", nil })
	if err := old.Add(grow); err != nil {
		t.Fatal(err)
	}
	if err := grown.Add(grow); err != nil {
		t.Fatal(err)
	}
	f.srv.Tools = func() (*tool.Registry, error) { return current, nil }
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "grow")
	w.until(t, EventTurnFinished)
	f.startTurn(id, "again")
	var notices []string
	for _, e := range w.until(t, EventTurnFinished) {
		if e.Type == EventNotice {
			var n noticeEvent
			mustJSON(t, e.Data, &n)
			notices = append(notices, n.Text)
		}
	}
	toolNames := func(i int) []string {
		var names []string
		for _, d := range f.fake.Request(i)["tools"].([]any) {
			names = append(names, d.(map[string]any)["name"].(string))
		}
		return names
	}
	if slices.Contains(toolNames(1), "grown--run") {
		t.Errorf("the turn in flight offered the new tool: %v", toolNames(1))
	}
	if !slices.Contains(toolNames(2), "grown--run") {
		t.Errorf("the next turn does not offer the new tool: %v", toolNames(2))
	}
	if len(notices) == 0 || !strings.Contains(notices[0], "tools changed; this turn offers the new set") {
		t.Errorf("notices %q", notices)
	}
	if _, body := f.do("GET", "/v1/tools", ""); !strings.Contains(string(body), "grown--run") {
		t.Errorf("GET /v1/tools does not list the new tool")
	}
}

func TestAnElicitationWhoseTurnIsCancelledIsCancelled(t *testing.T) {
	f := newAskFixture(t, callElicit...)
	a := f.asked(t)
	id, w, ts, el := a.id, a.w, a.ts, a.el
	if status, body := f.do("POST", "/v1/conversations/"+id+"/turns/"+ts.Turn+"/cancel", ""); status != 200 {
		t.Fatalf("cancel: %d %s", status, body)
	}
	// the call ends, and the MCP server withdraws its request: either ends it
	var expired elicitationEndedEvent
	evs := w.until(t, EventElicitationExpired)
	mustJSON(t, evs[len(evs)-1].Data, &expired)
	if expired.ID != el.ID || expired.Action != "cancel" || (expired.Reason != "the call it was asked during has ended" && expired.Reason != "the MCP server withdrew it") {
		t.Fatalf("elicitation.expired %+v", expired)
	}
	if status, _ := f.do("POST", "/v1/conversations/"+id+"/elicitations/"+el.ID, `{"action":"decline"}`); status != http.StatusConflict {
		t.Fatalf("an answer after the cancel: %d", status)
	}
}

func TestWhoseRequestItIsIsToldByTheCallsInFlightAndNeverGuessed(t *testing.T) {
	turnA := turnContext(context.Background(), "conv_a", "turn_1", nil)
	turnA2 := turnContext(context.Background(), "conv_a", "turn_1", nil)
	turnB := turnContext(context.Background(), "conv_b", "turn_2", nil)
	asking := func(calls ...context.Context) context.Context {
		return mcp.WithCalls(context.Background(), calls...)
	}
	for _, c := range []struct {
		name  string
		ctx   context.Context
		conv  string
		calls int
		err   string
	}{
		{"one call", asking(turnA), "conv_a", 1, ""},
		{"two calls of one conversation", asking(turnA, context.Background(), turnA2), "conv_a", 2, ""},
		{"calls of two conversations", asking(turnA, turnB), "", 0, "calls of 2 conversations (conv_a, conv_b) were in flight to it"},
		{"no call", asking(), "", 0, "it asked outside any call of a conversation"},
		{"a call of no conversation", asking(context.Background()), "", 0, "it asked outside any call of a conversation"},
	} {
		ti, calls, err := askedBy(c.ctx)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
		case err != nil || ti.conv != c.conv || len(calls) != c.calls:
			t.Errorf("%s: %+v, %d calls, %v", c.name, ti, len(calls), err)
		}
	}
}

func TestAURLElicitationIsAcceptedWithoutContent(t *testing.T) {
	f := newAskFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "asker--visit", Input: `{}`}}},
		providertest.Step{Text: "signed in"},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "sign in")
	evs := w.until(t, EventElicitation)
	var el elicitationEvent
	mustJSON(t, evs[len(evs)-1].Data, &el)
	if el.Mode != "url" || el.URL != "https://example.test/signin" || len(el.Fields) != 0 {
		t.Fatalf("elicitation event %+v", el)
	}
	path := "/v1/conversations/" + id + "/elicitations/" + el.ID
	if status, body := f.do("POST", path, `{"action":"accept","content":{"x":1}}`); status != http.StatusBadRequest || !strings.Contains(string(body), "takes no content") {
		t.Fatalf("content with a URL: %d %s", status, body)
	}
	if status, body := f.do("POST", path, `{"action":"accept"}`); status != 200 {
		t.Fatalf("accept: %d %s", status, body)
	}
	var result toolFinishedEvent
	decode(t, w.until(t, EventTurnFinished), EventToolFinished, &result)
	if result.Text != "accept" {
		t.Fatalf("the server got %q", result.Text)
	}
}

// With a shared event log (serve --worker), an answer posted to another
// process than the one waiting on the elicitation reaches it through the
// log; a second answer, to either, is a 409.
func TestAnElicitationIsAnsweredThroughAnotherProcessSharingTheEvents(t *testing.T) {
	f := newAskFixture(t, callElicit...)
	shared := newMemoryEvents(0, 0, 0)
	f.srv.Events = shared
	other := &Server{Agent: f.srv.Agent, Workspace: f.srv.Workspace, Events: shared}
	hs := httptest.NewServer(other)
	t.Cleanup(func() { other.Close(); hs.Close() })
	a := f.asked(t)
	post := func(base, body string) (int, string) {
		return postTo(t, base+"/v1/conversations/"+a.id+"/elicitations/"+a.el.ID, body)
	}
	// the other process lists it, from the shared events
	if resp, err := http.Get(hs.URL + "/v1/conversations/" + a.id + "/elicitations"); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), a.el.ID) {
			t.Fatalf("the other process lists %s, not the elicitation waiting on the first", b)
		}
	}
	if status, body := post(hs.URL, `{"action":"accept","content":{"age":"x"}}`); status != http.StatusBadRequest || !strings.Contains(body, "is not a number") {
		t.Fatalf("a bad answer to the other process: %d %s", status, body)
	}
	// an answer goes to the waiting process as an event, which is bounded
	long := strings.Repeat("n", MaxEventBytes+1)
	if status, body := post(hs.URL, `{"action":"accept","content":{"age":7,"name":"`+long+`"}}`); status != http.StatusBadRequest || !strings.Contains(body, "over the") {
		t.Fatalf("an answer over MaxEventBytes to the other process: %d %.300s", status, body)
	}
	if status, body := post(hs.URL, `{"action":"accept","content":{"age":7}}`); status != 200 {
		t.Fatalf("the answer to the other process: %d %s", status, body)
	}
	var result toolFinishedEvent
	decode(t, a.w.until(t, EventTurnFinished), EventToolFinished, &result)
	if result.Text != `accept {"age":7,"color":"blue","name":"Ann","verified":true}` {
		t.Fatalf("the server got %q", result.Text)
	}
	for _, base := range []string{hs.URL, f.http.URL} {
		if status, body := post(base, `{"action":"decline"}`); status != http.StatusConflict {
			t.Errorf("a second answer to %s: %d %s", base, status, body)
		}
	}
	if status, body := postTo(t, hs.URL+"/v1/conversations/"+a.id+"/elicitations/elicit_none", `{"action":"decline"}`); status != http.StatusNotFound {
		t.Errorf("an unknown elicitation: %d %s", status, body)
	}
}

// postTo posts body to url and returns the status and body.
func postTo(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// decode decodes into v the data of the last event of type typ in evs,
// failing the test when there is none.
func decode(t *testing.T, evs []Event, typ string, v any) {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			mustJSON(t, evs[i].Data, v)
			return
		}
	}
	t.Fatalf("no %s event among %v", typ, types(evs))
}
