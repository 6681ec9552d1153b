package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// bigText is what the big--run tool returns: over the default inline cap,
// so it spills.
var bigText = strings.Repeat("a line of the big output, numbered by its place\n", 3000)

// mcpReply is what the mcp--reply tool's "server" answered.
const mcpReply = `{"content":[{"type":"text","text":"from <the> server"}],"structuredContent":{"n":1},"isError":false}`

// fixture is a server over an agent on the fake Anthropic provider, an
// in-memory store and a workspace with its tools and two of the test's.
type fixture struct {
	t     testing.TB
	srv   *Server
	http  *httptest.Server
	fake  *providertest.Server
	store *history.Memory
	token string
}

func newFixture(t testing.TB, steps ...providertest.Step) *fixture {
	t.Helper()
	fake := providertest.NewAnthropic(t, steps...)
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: fake.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := &tool.Registry{}
	if err := reg.Add(ws.Tools()...); err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(
		tool.MustFunc("big--run", "Prints a lot.", func(context.Context, struct{}) (any, error) { return bigText, nil }),
		tool.MustFunc("fail--run", "Fails.", func(context.Context, struct{}) (any, error) { return nil, fmt.Errorf("it failed: on purpose") }),
		tool.MustFunc("mcp--reply", "Answers as an MCP server would.", func(context.Context, struct{}) (any, error) {
			return result.FromMCP([]byte(mcpReply))
		}),
		tool.MustFunc("noop--run", "Does nothing.", func(context.Context, struct{}) (any, error) { return "ok", nil }),
		tool.MustFunc("shot--run", "Shows the screen.", func(context.Context, struct{}) (any, error) {
			return result.Result{Data: []result.Block{result.TextBlock{Text: "the screen:"}, result.ImageBlock{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}}}, nil
		}),
	); err != nil {
		t.Fatal(err)
	}
	store := &history.Memory{}
	a := &agent.Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: "claude-test", KeepRequests: true}
	f := &fixture{t: t, fake: fake, store: store}
	f.srv = &Server{Agent: a, Workspace: ws}
	f.http = httptest.NewServer(f.srv)
	// the server first: it ends the event streams, which a browser would
	// otherwise hold open
	t.Cleanup(func() { f.srv.Close(); f.http.Close() })
	return f
}

// do sends a request and returns the status and body.
func (f *fixture) do(method, path, body string, header ...string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.http.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (f *fixture) newConversation() string {
	f.t.Helper()
	status, body := f.do("POST", "/v1/conversations", "")
	if status != http.StatusCreated {
		f.t.Fatalf("create: %d %s", status, body)
	}
	var c ConversationInfo
	mustJSON(f.t, body, &c)
	return c.ID
}

func (f *fixture) startTurn(id, prompt string) TurnStarted {
	f.t.Helper()
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":`+quote(prompt)+`}`)
	if status != http.StatusAccepted {
		f.t.Fatalf("start turn: %d %s", status, body)
	}
	var ts TurnStarted
	mustJSON(f.t, body, &ts)
	return ts
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// watcher reads a conversation's event stream.
type watcher struct {
	resp *http.Response
	r    *bufio.Reader
}

func (f *fixture) watch(id string, header ...string) *watcher {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.http.URL+"/v1/conversations/"+id+"/events", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		f.t.Fatalf("events: %d %s", resp.StatusCode, b)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return &watcher{resp: resp, r: bufio.NewReader(resp.Body)}
}

// next reads one event (skipping comments); it fails the test after 10 s.
func (w *watcher) next(t *testing.T) Event {
	t.Helper()
	type got struct {
		ev  Event
		err error
	}
	ch := make(chan got, 1)
	go func() {
		var ev Event
		for {
			line, err := w.r.ReadString('\n')
			if err != nil {
				ch <- got{err: err}
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if ev.Type != "" {
					ch <- got{ev: ev}
					return
				}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "id: "):
				fmt.Sscan(line[4:], &ev.Seq)
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.Data = json.RawMessage(line[6:])
			}
		}
	}()
	select {
	case g := <-ch:
		if g.err != nil {
			t.Fatalf("reading events: %v", g.err)
		}
		return g.ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event in 10 s")
		return Event{}
	}
}

// until reads events up to and including one of type typ.
func (w *watcher) until(t *testing.T, typ string) []Event {
	t.Helper()
	var evs []Event
	for {
		ev := w.next(t)
		evs = append(evs, ev)
		if ev.Type == typ {
			return evs
		}
	}
}

// types are the events' types, a run of model.delta as one.
func types(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == EventModelDelta && len(out) > 0 && out[len(out)-1] == e.Type {
			continue
		}
		out = append(out, e.Type)
	}
	return out
}

func TestATurnStreamsItsEventsAndServesWhatWasStoredAsStored(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{
			{ID: "c1", Name: "big--run", Input: `{}`},
			{ID: "c2", Name: "fail--run", Input: `{}`},
		}},
		providertest.Step{Text: "done <&> here"},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go")
	evs := w.until(t, EventTurnFinished)
	want := []string{EventTurnStarted, EventMessageStored, EventUsage, EventMessageStored, EventToolStarted, EventToolStarted,
		EventMessageStored, EventToolFinished, EventToolFinished, EventModelDelta, EventUsage, EventMessageStored, EventTurnFinished}
	if strings.Join(types(evs), " ") != strings.Join(want, " ") {
		t.Fatalf("events %v, want %v", types(evs), want)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has id %d", i, e.Seq)
		}
	}
	var big, failed toolFinishedEvent
	mustJSON(t, evs[7].Data, &big)
	mustJSON(t, evs[8].Data, &failed)
	// message.stored numbers the records as GET .../messages does
	var ns []string
	for _, e := range evs {
		if e.Type == EventMessageStored {
			var m messageStoredEvent
			mustJSON(t, e.Data, &m)
			ns = append(ns, fmt.Sprintf("%d:%s", m.N, m.Role))
		}
	}
	if got := strings.Join(ns, " "); got != "1:user 2:assistant 3:user 4:assistant" {
		t.Fatalf("message.stored events: %s", got)
	}
	if big.CallID != "c1" || big.SpillPath == "" || big.Chars != len(bigText) || !strings.Contains(big.Text, big.SpillPath) {
		t.Fatalf("big result event: %+v", big)
	}
	if !failed.IsError || !strings.Contains(failed.Text, "it failed: on purpose") {
		t.Fatalf("failed result event: %+v", failed)
	}

	// The messages are the stored records, as the store encodes them.
	status, body := f.do("GET", "/v1/conversations/"+id+"/messages", "")
	if status != 200 {
		t.Fatalf("messages: %d %s", status, body)
	}
	var got struct {
		Messages []StoredMessage
		Total    int
	}
	mustJSON(t, body, &got)
	stored, _ := f.store.Messages(context.Background(), id)
	if got.Total != len(stored) || len(got.Messages) != len(stored) || len(stored) != 4 {
		t.Fatalf("%d messages served of %d stored (total %d)", len(got.Messages), len(stored), got.Total)
	}
	for i, m := range stored {
		raw, _ := result.JSON(m)
		if !bytes.Equal(got.Messages[i].Message, raw) {
			t.Fatalf("message %d served as\n%s\nstored as\n%s", i+1, got.Messages[i].Message, raw)
		}
	}
	// the model's text is served as itself, not HTML-escaped
	if !bytes.Contains(body, []byte("done <&> here")) {
		t.Fatalf("the answer's text was escaped: %s", body)
	}
	// the tool result the model read is the text the event carried
	if stored[2].Parts[0].Text != big.Text {
		t.Fatal("the stored result is not the text the event carried")
	}
	status, body = f.do("GET", "/v1/conversations/"+id+"/messages?after=3", "")
	mustJSON(t, body, &got)
	if status != 200 || len(got.Messages) != 1 || got.Messages[0].N != 4 {
		t.Fatalf("after=3: %d %s", status, body)
	}
}

func TestEventsResumeFromLastEventIDWithNothingLostOrTwice(t *testing.T) {
	hold := make(chan struct{})
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "fail--run", Input: `{}`}}},
		providertest.Step{Text: "second answer", Hold: hold},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go")
	first := w.until(t, EventToolFinished)
	w.resp.Body.Close() // the client goes away mid-turn
	close(hold)         // and the turn goes on without it

	last := first[len(first)-1].Seq
	w2 := f.watch(id, "Last-Event-ID", fmt.Sprint(last))
	rest := w2.until(t, EventTurnFinished)
	all := append(first, rest...)
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("after the resume, event %d has id %d: %v", i, e.Seq, types(all))
		}
	}
	// a third client from the start sees the same events
	w3 := f.watch(id, "Last-Event-ID", "0")
	again := w3.until(t, EventTurnFinished)
	if len(again) != len(all) {
		t.Fatalf("a watcher from the start saw %d events, want %d", len(again), len(all))
	}
	for i := range again {
		if again[i].Seq != all[i].Seq || !bytes.Equal(again[i].Data, all[i].Data) {
			t.Fatalf("event %d differs between watchers", i+1)
		}
	}
}

func TestTwoClientsWatchOneConversation(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "hello both"})
	id := f.newConversation()
	a, b := f.watch(id), f.watch(id)
	f.startTurn(id, "hi")
	ea, eb := a.until(t, EventTurnFinished), b.until(t, EventTurnFinished)
	if strings.Join(types(ea), " ") != strings.Join(types(eb), " ") || len(ea) < 3 {
		t.Fatalf("the two watchers saw %v and %v", types(ea), types(eb))
	}
	var fin turnFinishedEvent
	mustJSON(t, ea[len(ea)-1].Data, &fin)
	if fin.Reason != "end_turn" || fin.Text != "hello both" {
		t.Fatalf("turn.finished: %+v", fin)
	}
}

func TestCancelStopsARunningTurnAndKeepsWhatItDid(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	f := newFixture(t, providertest.Step{Text: "never", Hold: hold})
	id := f.newConversation()
	w := f.watch(id)
	ts := f.startTurn(id, "wait for me")
	w.until(t, EventTurnStarted)
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns/"+ts.Turn+"/cancel", "")
	var cr CancelResult
	mustJSON(t, body, &cr)
	if status != 200 || cr.Reason != "cancelled" {
		t.Fatalf("cancel: %d %s", status, body)
	}
	evs := w.until(t, EventTurnFinished)
	if types(evs)[len(evs)-2] != EventError {
		t.Fatalf("events after cancel: %v", types(evs))
	}
	msgs, _ := f.store.Messages(context.Background(), id)
	if len(msgs) == 0 || msgs[0].Parts[0].Text != "wait for me" {
		t.Fatalf("the prompt was not kept: %+v", msgs)
	}
	status, body = f.do("POST", "/v1/conversations/"+id+"/turns/"+ts.Turn+"/cancel", "")
	if status != http.StatusConflict || !strings.Contains(string(body), "already finished") {
		t.Fatalf("a second cancel: %d %s", status, body)
	}
}

func TestATurnOnAConversationAnotherWriterHoldsIs409NamingTheHolder(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	f := newFixture(t, providertest.Step{Text: "slow", Hold: hold})
	id := f.newConversation()

	// another writer, outside this server
	other := history.NewHolder()
	if _, err := f.store.Claim(context.Background(), id, other, time.Minute); err != nil {
		t.Fatal(err)
	}
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"hi"}`)
	var held Held
	mustJSON(t, body, &held)
	if status != http.StatusConflict || held.Error.Holder == nil || held.Error.Holder.Token != other.Token {
		t.Fatalf("held by another writer: %d %s", status, body)
	}
	if err := f.store.Release(context.Background(), id, other); err != nil {
		t.Fatal(err)
	}

	// this server's own running turn
	ts := f.startTurn(id, "hi")
	status, body = f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"again"}`)
	mustJSON(t, body, &held)
	if status != http.StatusConflict || held.Error.Turn != ts.Turn {
		t.Fatalf("held by this server's turn: %d %s", status, body)
	}
}

func TestBadInputGetsAClearJSONError(t *testing.T) {
	f := newFixture(t)
	f.srv.MaxBody = 1 << 10
	id := f.newConversation()
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
		says                     string
	}{
		{"not JSON", "POST", "/v1/conversations/" + id + "/turns", `{"prompt":`, nil, 400, "not the JSON"},
		{"unknown field", "POST", "/v1/conversations/" + id + "/turns", `{"prompt":"x","modle":"y"}`, nil, 400, `unknown field "modle"`},
		{"no prompt", "POST", "/v1/conversations/" + id + "/turns", `{}`, nil, 400, "needs a prompt"},
		{"two values", "POST", "/v1/conversations/" + id + "/turns", `{"prompt":"x"} {}`, nil, 400, "more than one"},
		{"body too big", "POST", "/v1/conversations/" + id + "/turns", `{"prompt":"` + strings.Repeat("x", 2<<10) + `"}`, nil, 400, "over 1024 bytes"},
		{"no conversation", "POST", "/v1/conversations/nope/turns", `{"prompt":"x"}`, nil, 404, `no conversation "nope"`},
		{"no conversation to get", "GET", "/v1/conversations/nope", ``, nil, 404, `no conversation "nope"`},
		{"bad after", "GET", "/v1/conversations/" + id + "/messages?after=x", ``, nil, 400, `after is "x"`},
		{"bad Last-Event-ID", "GET", "/v1/conversations/" + id + "/events", ``, []string{"Last-Event-ID", "abc"}, 400, `Last-Event-ID header is "abc"`},
		{"unknown tool", "POST", "/v1/tools/nope--run/call", `{}`, nil, 404, `no tool "nope--run"`},
		{"tool input not an object", "POST", "/v1/tools/big--run/call", `[1]`, nil, 200, `invalid input for big--run: type: [1] has type "array", want "object"`},
		{"no endpoint", "GET", "/v1/nothing", ``, nil, 404, "no endpoint GET /v1/nothing"},
		{"wrong method", "DELETE", "/v1/conversations", ``, nil, 405, "DELETE is not a method of /v1/conversations; it takes GET, POST"},
		{"spill escape", "GET", "/v1/spills/.myelin/tool-results/../../etc/passwd", ``, nil, 400, "not a spill file"},
		{"spill elsewhere", "GET", "/v1/spills/secret.txt", ``, nil, 400, "not a spill file"},
		{"no cancel", "POST", "/v1/conversations/" + id + "/turns/turn_x/cancel", ``, nil, 404, `no turn "turn_x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.do(tc.method, tc.path, tc.body, tc.header...)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			var e apiError
			_ = json.Unmarshal(body, &e)
			var o ToolOutput
			_ = json.Unmarshal(body, &o)
			if tc.says != "" && !strings.Contains(e.Error.Message+o.Text, tc.says) {
				t.Fatalf("the answer does not say %q: %s", tc.says, body)
			}
		})
	}
	// and the server still answers
	if status, _ := f.do("GET", "/v1/conversations", ""); status != 200 {
		t.Fatalf("after bad input the server answers %d", status)
	}
}

func TestTheTokenIsCheckedOnEveryRequest(t *testing.T) {
	f := newFixture(t)
	f.srv.Token = goodToken
	for _, path := range []string{"/v1/conversations", "/v1/tools", "/v1/spills/.myelin/tool-results/x"} {
		if status, body := f.do("GET", path, ""); status != http.StatusUnauthorized || !strings.Contains(string(body), "Authorization: Bearer") {
			t.Fatalf("%s without the token: %d %s", path, status, body)
		}
		if status, _ := f.do("GET", path, "", "Authorization", "Bearer wrong"); status != http.StatusUnauthorized {
			t.Fatalf("%s with a wrong token: %d", path, status)
		}
	}
	f.token = goodToken
	if status, body := f.do("GET", "/v1/conversations", ""); status != 200 {
		t.Fatalf("with the token: %d %s", status, body)
	}
}

func TestLoopbackAddresses(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7700": true, "localhost:7700": true, "[::1]:7700": true,
		"0.0.0.0:7700": false, ":7700": false, "192.168.1.2:7700": false, "example.com:80": false, "nonsense": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestToolCallsAnswerWhatTheCLIPrintsAndSpillsPageWithTheReadPager(t *testing.T) {
	f := newFixture(t)
	status, body := f.do("POST", "/v1/tools/big--run/call", "")
	var out ToolOutput
	mustJSON(t, body, &out)
	if status != 200 || out.IsError || out.SpillPath == "" || !strings.Contains(out.Text, out.SpillPath) {
		t.Fatalf("big--run: %d %s", status, body)
	}
	status, body = f.do("GET", "/v1/spills/"+out.SpillPath+"?offset=2&limit=3", "")
	var page ToolOutput
	mustJSON(t, body, &page)
	if status != 200 || page.IsError {
		t.Fatalf("spill page: %d %s", status, body)
	}
	// the same call through the tool itself gives the same text
	_, body = f.do("POST", "/v1/tools/workspace--read/call", `{"path":`+quote(out.SpillPath)+`,"offset":2,"limit":3}`)
	var direct ToolOutput
	mustJSON(t, body, &direct)
	if direct.Text != page.Text || !strings.Contains(page.Text, "a line of the big output") {
		t.Fatalf("spill page\n%s\nworkspace--read\n%s", page.Text, direct.Text)
	}
	status, body = f.do("GET", "/v1/spills/.myelin/tool-results/missing.txt", "")
	if status != 404 {
		t.Fatalf("a missing spill: %d %s", status, body)
	}
	status, body = f.do("GET", "/v1/tools", "")
	if status != 200 || !strings.Contains(string(body), `"name":"big--run"`) {
		t.Fatalf("tools: %d %s", status, body)
	}
}

// A client that opens the event stream and never reads it cannot hold a
// turn: the turn's events go to the log, and only that client's own
// connection waits.
func TestASlowClientCannotHoldATurn(t *testing.T) {
	long := strings.Repeat("a long answer that fills a socket's buffers ", 200_000) // ~9 MB of deltas
	f := newFixture(t, providertest.Step{Text: long})
	id := f.newConversation()
	conn, err := net.Dial("tcp", f.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/conversations/%s/events HTTP/1.1\r\nHost: x\r\n\r\n", id) // and never read
	time.Sleep(50 * time.Millisecond)
	w := f.watch(id)
	f.startTurn(id, "talk a lot")
	evs := w.until(t, EventTurnFinished)
	var text strings.Builder
	for _, e := range evs {
		var d modelDeltaEvent
		if e.Type == EventModelDelta && json.Unmarshal(e.Data, &d) == nil {
			text.WriteString(d.Text)
		}
	}
	var fin struct {
		turnFinishedEvent
		Cut []string `json:"cut"`
	}
	mustJSON(t, evs[len(evs)-1].Data, &fin)
	// the answer is the deltas; turn.finished carries its start (MaxEventBytes)
	if fin.Reason != "end_turn" || text.String() != long || !strings.HasPrefix(long, fin.Text) || len(fin.Cut) != 1 {
		t.Fatalf("turn.finished: %s, %d chars (cut %v); the deltas: %d chars of the %d answered", fin.Reason, len(fin.Text), fin.Cut, text.Len(), len(long))
	}
}

// Each request is served byte for byte as the provider received it, with
// the usage that came back and the place of its answer; the diff of the
// second against the first says the second extends it.
func TestEachRequestIsServedAsTheProviderReceivedIt(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "fail--run", Input: `{}`}}, Input: 10, Output: 2, CacheWrite: 5},
		providertest.Step{Text: "done", Input: 3, Output: 1, CacheRead: 12},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go")
	w.until(t, EventTurnFinished)
	status, body := f.do("GET", "/v1/conversations/"+id+"/requests", "")
	var list struct{ Requests []RequestInfo }
	mustJSON(t, body, &list)
	got := f.fake.Requests()
	if status != 200 || len(list.Requests) != 2 || len(got) != 2 {
		t.Fatalf("requests: %d %s (the provider got %d)", status, body, len(got))
	}
	for i, r := range list.Requests {
		if r.N != i+1 || r.Msg != 2+2*i || r.Usage == nil || r.Bytes != len(got[i]) {
			t.Fatalf("request %d: %+v", i+1, r)
		}
		status, b := f.do("GET", r.Body, "")
		if status != 200 || !bytes.Equal(b, got[i]) {
			t.Fatalf("request %d's body is not what the provider received:\n%s\n%s", i+1, b, got[i])
		}
	}
	if u := list.Requests[1].Usage; u.CacheRead != 12 || u.Input != 3 {
		t.Fatalf("the second request's usage: %+v", u)
	}
	status, body = f.do("GET", "/v1/conversations/"+id+"/requests/2/diff", "")
	var d RequestDiff
	mustJSON(t, body, &d)
	if status != 200 || d.Kind != "extends" || d.Path != "messages[1]" || d.Against != 1 {
		t.Fatalf("diff: %d %s", status, body)
	}
	for path, want := range map[string]int{
		"/v1/conversations/" + id + "/requests/3":                404,
		"/v1/conversations/" + id + "/requests/0":                400,
		"/v1/conversations/" + id + "/requests/1/diff":           400,
		"/v1/conversations/" + id + "/requests/2/diff?against=x": 400,
	} {
		if status, body := f.do("GET", path, ""); status != want {
			t.Errorf("%s: %d, want %d: %s", path, status, want, body)
		}
	}
}

// A turn names its own model and limits; the server's stay as they were.
func TestATurnTakesItsOwnModelAndLimits(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}},
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c2", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "done"},
	)
	id := f.newConversation()
	w := f.watch(id)
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"go","model":"claude-other","max_rounds":1,"max_tokens":1000}`)
	if status != http.StatusAccepted {
		t.Fatalf("%d %s", status, body)
	}
	evs := w.until(t, EventTurnFinished)
	var fin turnFinishedEvent
	mustJSON(t, evs[len(evs)-1].Data, &fin)
	if fin.Reason != "round_limit" || fin.Rounds != 1 {
		t.Fatalf("turn.finished: %+v", fin)
	}
	req := f.fake.Request(0)
	if req["model"] != "claude-other" || req["max_tokens"] != float64(1000) {
		t.Fatalf("the turn's request named %v with max_tokens %v", req["model"], req["max_tokens"])
	}
	if f.srv.Agent.Model != "claude-test" || f.srv.Agent.MaxRounds != 0 {
		t.Fatalf("the server's agent changed: %q, %d", f.srv.Agent.Model, f.srv.Agent.MaxRounds)
	}
	for _, bad := range []string{`{"prompt":"x","max_rounds":-1}`, `{"prompt":"x","max_tokens":-5}`, `{"prompt":"x","max_rounds":"many"}`} {
		if status, body := f.do("POST", "/v1/conversations/"+id+"/turns", bad); status != 400 {
			t.Errorf("%s: %d %s", bad, status, body)
		}
	}
}

// CORS is off unless configured: no headers for any origin; with an
// origin allowed, its pages get the headers and their preflights an
// answer, and other origins still none; the token is still checked.
func TestCORSIsOffUnlessAnOriginIsAllowed(t *testing.T) {
	f := newFixture(t)
	get := func(origin string) http.Header {
		req, _ := http.NewRequest("GET", f.http.URL+"/v1/conversations", nil)
		req.Header.Set("Origin", origin)
		if f.token != "" {
			req.Header.Set("Authorization", "Bearer "+f.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header
	}
	preflight := func(origin string) (int, http.Header) {
		req, _ := http.NewRequest("OPTIONS", f.http.URL+"/v1/conversations", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	if h := get("https://app.example"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS headers with none configured: %v", h)
	}
	f.srv.CORSOrigins = []string{"https://app.example"}
	f.srv.Token = goodToken
	f.token = goodToken
	if h := get("https://app.example"); h.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("an allowed origin: %v", h)
	}
	if h := get("https://evil.example"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin: %v", h)
	}
	status, h := preflight("https://app.example")
	if status != http.StatusNoContent || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", status, h)
	}
	if _, h := preflight("https://evil.example"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a preflight from another origin: %v", h)
	}
	f.token = "wrong"
	if status, _ := f.do("GET", "/v1/conversations", "", "Origin", "https://app.example"); status != http.StatusUnauthorized {
		t.Fatalf("an allowed origin without the token: %d", status)
	}
}

// A call's event carries what the tool produced beside what the model
// read: an MCP server's reply as it came, and what was repaired.
func TestAToolFinishedEventCarriesTheServersOwnReply(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "mcp--reply", Input: `{}`}}},
		providertest.Step{Text: "ok"},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go")
	for _, e := range w.until(t, EventTurnFinished) {
		if e.Type != EventToolFinished {
			continue
		}
		var d toolFinishedEvent
		mustJSON(t, e.Data, &d)
		if d.Reply != mcpReply || d.ReplyBytes != len(mcpReply) || d.Text != "from <the> server" || string(d.Structured) != `{"n":1}` {
			t.Fatalf("tool.finished: %+v", d)
		}
		return
	}
	t.Fatal("no tool.finished event")
}

// The refusal guard's record (docs/agent.md) is told apart from a
// clearing: context.withheld, its edit carrying the refused answer.
func TestAGuardsWithheldRoundIsAContextWithheldEvent(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "I won't.", Refuse: true},
		providertest.Step{Text: "done"},
	)
	f.srv.Agent.RefusalGuard = true
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go")
	var withheld []contextEvent
	for _, e := range w.until(t, EventTurnFinished) {
		switch e.Type {
		case EventContextWithheld:
			var c contextEvent
			mustJSON(t, e.Data, &c)
			withheld = append(withheld, c)
		case EventContextCleared:
			t.Errorf("the guard's record came as %s: %s", e.Type, e.Data)
		}
	}
	if len(withheld) != 1 || withheld[0].Edit == nil || withheld[0].Edit.Refusal == nil || withheld[0].Edit.Refusal.Text != "I won't." {
		t.Fatalf("context.withheld events %+v", withheld)
	}
}

// A turn refused because another writer holds the conversation is over
// by the time its client reads the 409: a retry at once is refused for
// the same holder, not for a turn of this server still winding down.
func TestARetryAfterA409ForAnotherWriterIsNotRefusedForTheRefusedTurn(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "done"})
	id := f.newConversation()
	other := history.NewHolder()
	if _, err := f.store.Claim(context.Background(), id, other, time.Minute); err != nil {
		t.Fatal(err)
	}
	proceed := make(chan struct{})
	wait := func() { <-proceed } // the refused turn's goroutine waits here
	afterRefusedStart.Store(&wait)
	t.Cleanup(func() { afterRefusedStart.Store(nil) })
	var once sync.Once
	release := func() { once.Do(func() { close(proceed) }) }
	t.Cleanup(release)
	for i := range 2 {
		status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"hi"}`)
		var held Held
		mustJSON(t, body, &held)
		if status != http.StatusConflict || held.Error.Holder == nil || held.Error.Holder.Token != other.Token {
			t.Fatalf("try %d, while another writer holds the conversation: %d %s; want 409 naming that writer", i+1, status, body)
		}
	}
	release()
}
