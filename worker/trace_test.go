package worker

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/server"
	"github.com/myelin-run/myelin/telemetry/otlp"
	"github.com/myelin-run/myelin/telemetry/otlptest"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// mcpOverHTTP is the test MCP server over HTTP on loopback, recording the
// traceparent header of each tools/call, and a Set of tools connected to
// it (named web--...).
func mcpOverHTTP(t *testing.T) (tools *tool.Registry, seen func() []string) {
	t.Helper()
	var mu sync.Mutex
	var headers []string
	inner := mcptest.Handler(false)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				mu.Lock()
				headers = append(headers, r.Header.Get("traceparent"))
				mu.Unlock()
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the Set closes: its standalone stream is open until then
	set := mcp.Start(context.Background(), []mcp.Server{{Name: "web", Type: "http", URL: srv.URL}}, mcp.Options{Dir: t.TempDir(), MaxReply: 8 << 20})
	t.Cleanup(func() { set.Close() })
	if f := set.Failures(); f != nil {
		t.Fatal(f)
	}
	tools = &tool.Registry{}
	if err := tools.Add(set.Tools()...); err != nil {
		t.Fatal(err)
	}
	return tools, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), headers...)
	}
}

// tracedWorkerOn is one `serve --worker` process on store: a server whose
// turns are offered tools and sent to fake, and a queue of one worker.
func tracedWorkerOn(t *testing.T, store *postgres.Store, fake *providertest.Server, tools *tool.Registry) (*server.Server, *Queue) {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: fake.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	a := &agent.Agent{Provider: p, Store: store, Tools: tools, Env: result.Env{Store: ws}, Model: "claude-test"}
	api := &server.Server{Agent: a, Workspace: ws, Events: NewEvents(store.Pool(), EventsOptions{})}
	q, err := New(store, store.Pool(), api.RunQueued, Options{Workers: 1, Poll: 50 * time.Millisecond, End: api.EndQueued})
	if err != nil {
		t.Fatal(err)
	}
	api.Queue = q
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		q.Stop(ctx)
		api.Close()
		api.Events.(*Events).Close()
	})
	return api, q
}

// Issue 31 §1: the trace of a client's traceparent follows its turn
// through serve and the queue to the worker that runs it, into the MCP
// server over HTTP its tool call reaches, and on to the worker that
// continues the turn after the first hands it back (a hand-over), as
// exported over OTLP: the POST's server span continues the client's
// trace; each worker's invoke_agent span is the POST span's child; the
// chat and execute_tool spans are children of their turn's; the tool
// call's span says its call id and the file its result spilled to; and
// the MCP server was sent the execute_tool span's traceparent.
func TestATraceFollowsATurnThroughServeAWorkerItsMCPCallAndAHandOver(t *testing.T) {
	s, reopen := open(t)
	rcv := otlptest.Start(t)
	rcv.UseHTTP(t)
	shutdown, err := otlp.Setup(context.Background(), otlp.Config{Service: "myelin-test"})
	if err != nil {
		t.Fatal(err)
	}
	flushed := false
	t.Cleanup(func() {
		if !flushed {
			_ = shutdown(context.Background())
		}
	})
	tools, seen := mcpOverHTTP(t)

	// worker A: its first request calls the MCP tool (a result big enough
	// to be spilled), its second waits until A hands the turn back
	fakeA := providertest.NewAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "toolu_1", Name: "web--big", Input: `{"mib":0.25}`}}})
	arrived, resume := make(chan struct{}), make(chan struct{})
	defer close(resume)
	var once sync.Once
	fakeA.Respond = func(providertest.Request) providertest.Step {
		once.Do(func() { close(arrived) })
		<-resume
		return providertest.Step{Text: "never sent: A stopped"}
	}
	apiA, qa := tracedWorkerOn(t, s, fakeA, tools)
	front := apiOn(t, reopen(), fakeA.URL, 0) // serve, running no turns
	newConv(t, s, "c1")

	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", front.URL+"/v1/conversations/c1/turns", strings.NewReader(`{"prompt":"go"}`))
	req.Header.Set("traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST of the turn: %s; want 202", resp.Status)
	}
	within(t, arrived, "worker A's second request")
	grace, cancel := context.WithTimeout(context.Background(), time.Hour) // not waited for: a worker's turns go back at once
	defer cancel()
	apiA.Shutdown(grace)
	stopQueue(t, qa)

	_, qb := tracedWorkerOn(t, s, providertest.NewAnthropic(t, providertest.Step{Text: "done, by B"}), tools)
	if tid := waitPending(t, qb, "c1", ""); tid != "" {
		t.Fatalf("turn %s is still pending after B started (jobs: %s)", tid, jobStates(t, s, "c1"))
	}
	ctx, cancelFlush := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelFlush()
	flushed = true
	if err := shutdown(ctx); err != nil {
		t.Fatalf("flushing the spans: %v", err)
	}

	spans := rcv.Spans()
	tree := otlptest.Tree(spans)
	var post *otlptest.Span
	var turns, chats, calls []otlptest.Span
	for _, sp := range spans {
		if sp.TraceID != clientTrace {
			continue // the front's and the workers' own requests (none here) and polls
		}
		switch {
		case sp.Name == "POST /v1/conversations/{id}/turns":
			post = &sp
		case strings.HasPrefix(sp.Name, "invoke_agent"):
			turns = append(turns, sp)
		case strings.HasPrefix(sp.Name, "chat"):
			chats = append(chats, sp)
		case strings.HasPrefix(sp.Name, "execute_tool"):
			calls = append(calls, sp)
		}
	}
	if post == nil {
		t.Fatalf("no server span of the POST in the client's trace; the spans:\n%s", tree)
	}
	if post.ParentSpanID != clientSpan || post.Kind != "server" || post.Attributes["http.route"] != "/v1/conversations/{id}/turns" ||
		post.Attributes["http.response.status_code"] != int64(202) || post.Resource["service.name"] != "myelin-test" {
		t.Errorf("the POST's span: parent %s, kind %s, attributes %v, resource %v; want parent %s, kind server, route and status 202, service myelin-test",
			post.ParentSpanID, post.Kind, post.Attributes, post.Resource, clientSpan)
	}
	if len(turns) != 2 {
		t.Fatalf("%d invoke_agent spans in the client's trace; want 2 (worker A's, handed back, and B's); the spans:\n%s", len(turns), tree)
	}
	for _, turn := range turns {
		if turn.ParentSpanID != post.SpanID || turn.Attributes["gen_ai.conversation.id"] != "c1" {
			t.Errorf("invoke_agent span %s: parent %s, conversation %v; want the POST's span %s, c1", turn.SpanID, turn.ParentSpanID, turn.Attributes["gen_ai.conversation.id"], post.SpanID)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("%d execute_tool spans; want 1; the spans:\n%s", len(calls), tree)
	}
	call := calls[0]
	var turnA, turnB otlptest.Span
	for _, turn := range turns {
		if turn.SpanID == call.ParentSpanID {
			turnA = turn
		} else {
			turnB = turn
		}
	}
	if turnA.SpanID == "" {
		t.Fatalf("the execute_tool span's parent %s is no invoke_agent span; the spans:\n%s", call.ParentSpanID, tree)
	}
	if call.Name != "execute_tool web--big" || call.Attributes["gen_ai.tool.call.id"] != "toolu_1" ||
		!strings.HasPrefix(call.Attributes["myelin.tool.result.spill_path"].(string), ".myelin/") {
		t.Errorf("the tool call's span: %s, attributes %v; want execute_tool web--big, call id toolu_1, the spill file's path", call.Name, call.Attributes)
	}
	if got, want := seen(), "00-"+clientTrace+"-"+call.SpanID+"-01"; len(got) != 1 || got[0] != want {
		t.Errorf("the MCP server was sent traceparent %q; want the execute_tool span's, %q", got, want)
	}
	under := map[string]int{}
	for _, c := range chats {
		under[c.ParentSpanID]++
		if c.Attributes["gen_ai.request.model"] != "claude-test" {
			t.Errorf("chat span %s: attributes %v; want gen_ai.request.model claude-test", c.Name, c.Attributes)
		}
	}
	// A's two requests (the second cut by the hand-back), B's one
	if under[turnA.SpanID] != 2 || under[turnB.SpanID] != 1 || len(chats) != 3 {
		t.Errorf("chat spans: %d under A's turn, %d under B's, %d in all; want 2, 1 and 3; the spans:\n%s", under[turnA.SpanID], under[turnB.SpanID], len(chats), tree)
	}
	if turnB.Attributes["myelin.turn.reason"] != "end_turn" {
		t.Errorf("B's invoke_agent span: attributes %v; want myelin.turn.reason end_turn", turnB.Attributes)
	}
}
