package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// rig is an agent wired to a fake Anthropic server, a SQLite store and a
// workspace in a temporary directory.
type rig struct {
	t     *testing.T
	wire  string // a key of testWires
	dir   string
	srv   *providertest.Server
	ws    *workspace.Workspace
	agent *Agent
	id    string
	// provider, when set, makes the wire's provider instead of testWires
	// (a wire configured otherwise, as for thinking).
	provider func(url string) (provider.Provider, error)
}

func newRig(t *testing.T, extra ...*tool.Tool) *rig { return newWireRig(t, "anthropic", extra...) }

func newWireRig(t *testing.T, wire string, extra ...*tool.Tool) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, wire: wire, dir: dir}
	r.srv = testWires[wire].server(t)
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	r.ws = ws
	r.agent = r.newAgent(extra...)
	id, err := r.agent.NewConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.id = id
	return r
}

// newAgent builds a fresh agent on the same files, as a restarted process
// would.
func (r *rig) newAgent(extra ...*tool.Tool) *Agent {
	r.t.Helper()
	store, err := sqlite.Open(filepath.Join(r.dir, ".myelin", "history.db"))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { store.Close() })
	mk := testWires[r.wire].provider
	if r.provider != nil {
		mk = r.provider
	}
	p, err := mk(r.srv.URL)
	if err != nil {
		r.t.Fatal(err)
	}
	reg := &tool.Registry{}
	if err := reg.Add(append(r.ws.Tools(), extra...)...); err != nil {
		r.t.Fatal(err)
	}
	return &Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: r.ws}, Model: "claude-test"}
}

func (r *rig) write(name, content string) {
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) turn(prompt string) (TurnResult, []Event) {
	r.t.Helper()
	var events []Event
	tr, err := r.agent.Turn(context.Background(), r.id, prompt, func(e Event) { events = append(events, e) })
	if err != nil {
		r.t.Fatal(err)
	}
	return tr, events
}

// sent is the next request of r's conversation as agent a builds it
// (Agent.Request) and its wire sends it to r's fake: its bytes.
func (r *rig) sent(a *Agent) string {
	r.t.Helper()
	ctx := context.Background()
	req, err := a.Request(ctx, r.id)
	if err != nil {
		r.t.Fatal(err)
	}
	r.srv.Push(providertest.Step{Text: "sent"})
	if _, err := a.Provider.Complete(ctx, req, nil); err != nil {
		r.t.Fatal(err)
	}
	reqs := r.srv.Requests()
	return string(reqs[len(reqs)-1])
}

func readCall(id, path string) providertest.ToolCall {
	return providertest.ToolCall{ID: id, Name: "workspace--read", Input: `{"path":"` + path + `"}`}
}

// toolResults returns the tool_result blocks of request i's last message.
func (r *rig) toolResults(i int) []map[string]any {
	msgs := r.srv.Request(i)["messages"].([]any)
	var out []map[string]any
	for _, b := range msgs[len(msgs)-1].(map[string]any)["content"].([]any) {
		if m := b.(map[string]any); m["type"] == "tool_result" {
			out = append(out, m)
		}
	}
	return out
}

func TestTheRequestBuiltAfterARestartIsTheSameBytes(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			r := newWireRig(t, wire)
			r.write("a.txt", "alpha\n")
			r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("toolu_1", "a.txt"), readCall("toolu_2", "nope")}}, providertest.Step{Text: "answer"})
			r.turn("turn one")
			// each agent's request, as its wire sends it to the fake
			send := r.sent
			before := send(r.agent)
			after := send(r.newAgent())
			if before != after {
				t.Fatalf("the request differs after a restart:\n%s\n%s", before, after)
			}
		})
	}
}

func TestRoundLimitEndsTheTurnWithAClearMessage(t *testing.T) {
	r := newRig(t)
	r.write("a.txt", "x\n")
	r.agent.MaxRounds = 2
	for i := 0; i < 3; i++ {
		r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("toolu_"+string(rune('a'+i)), "a.txt")}})
	}
	tr, events := r.turn("loop")
	if tr.Reason != "round_limit" || tr.Rounds != 2 {
		t.Fatalf("turn %+v", tr)
	}
	last := events[len(events)-1]
	if last.Kind != Notice || !strings.Contains(last.Text, "stopped after 2 tool rounds") {
		t.Fatalf("last event %+v", last)
	}
	// the conversation stays valid: the unrun call is answered
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	end := msgs[len(msgs)-1]
	must(t, fmt.Sprintf("last message %+v", end),
		want{end.Role == history.User, "the user's message"},
		want{end.Parts[0].IsError, "its first part an error result"},
		want{strings.Contains(end.Parts[0].Text, "limit of 2 tool rounds"), "its text to name the limit of 2 tool rounds"})
	// and it can go on
	r.srv.Push(providertest.Step{Text: "carrying on"})
	if tr, _ := r.turn("go on"); tr.Text != "carrying on" {
		t.Fatalf("turn %+v", tr)
	}
}

func TestAToolCanEndTheTurn(t *testing.T) {
	stop := tool.MustFunc("task--done", "Ends the turn.", func(ctx context.Context, in struct{}) (any, error) {
		return result.Result{Data: "finished", EndTurn: true}, nil
	})
	r := newRig(t, stop)
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "t1", Name: "task--done", Input: `{}`}}})
	tr, _ := r.turn("finish")
	if tr.Reason != "tool_end_turn" || len(r.srv.Requests()) != 1 {
		t.Fatalf("turn %+v after %d requests", tr, len(r.srv.Requests()))
	}
}

func TestArgumentsThatAreNotJSONAndUnknownToolsGetErrorResults(t *testing.T) {
	r := newRig(t)
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "t1", Name: "workspace--read", Input: `{"path": "a.txt`},
		{ID: "t2", Name: "no--such", Input: `{}`},
	}}, providertest.Step{Text: "sorry"})
	r.turn("go")
	res := r.toolResults(1)
	if res[0]["is_error"] != true || !strings.Contains(res[0]["content"].(string), "the input is not valid JSON") {
		t.Fatalf("result 1 %v", res[0])
	}
	if res[1]["is_error"] != true || !strings.Contains(res[1]["content"].(string), `no tool named "no--such"`) {
		t.Fatalf("result 2 %v", res[1])
	}
	// the bad call goes back to the provider as a valid tool_use
	msgs := r.srv.Request(1)["messages"].([]any)
	use := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	if use["type"] != "tool_use" || use["id"] != "t1" {
		t.Fatalf("tool_use %v", use)
	}
}

func TestRoundsRunConcurrentlyAndTheirResultsComeInCallOrder(t *testing.T) {
	r := newRig(t)
	r.write("a.txt", "A\n")
	r.write("b.txt", "B\n")
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("t1", "b.txt"), readCall("t2", "a.txt")}}, providertest.Step{Text: "ok"})
	r.turn("both")
	res := r.toolResults(1)
	must(t, fmt.Sprintf("results %v", res),
		want{res[0]["tool_use_id"] == "t1", "the first result t1's"},
		want{strings.Contains(res[0]["content"].(string), "B"), "the first result to hold b.txt's B"},
		want{res[1]["tool_use_id"] == "t2", "the second result t2's"})
}

func TestAnInterruptedCallIsAnsweredOnRestartAndNotRunAgain(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	// what a crash mid-round leaves: an assistant message asking for a call
	err := r.agent.Store.Append(ctx, r.id,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "write it"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "t1", Name: "workspace--write", Input: json.RawMessage(`{"path":"w.txt","content":"x"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	r.agent = r.newAgent()
	r.srv.Push(providertest.Step{Text: "ok"})
	r.turn("are you there?")
	if _, err := os.Stat(filepath.Join(r.dir, "w.txt")); err == nil {
		t.Fatal("the interrupted call was run again")
	}
	msgs := r.srv.Request(0)["messages"].([]any)
	res := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	must(t, fmt.Sprintf("first block of the last message %v", res),
		want{res["type"] == "tool_result", "a tool_result"},
		want{res["is_error"] == true, "an error"},
		want{strings.Contains(res["content"].(string), "interrupted"), "it to say the call was interrupted"})
}

func TestCancellingAStreamLeavesTheConversationValid(t *testing.T) {
	r := newRig(t)
	hold := make(chan struct{})
	r.srv.Push(providertest.Step{Text: "never", Hold: hold})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// cancelled once the request is at the fake, held there: never
		// before the turn has sent it, however slow the machine
		for len(r.srv.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := r.agent.Turn(ctx, r.id, "hello", nil)
	close(hold)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v (%T) from a cancelled turn is not context.Canceled", err, err)
	}
	// nothing had streamed: the answer is stored as that, so the next
	// prompt does not merge with this one
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	if len(msgs) != 2 {
		t.Fatalf("%d messages stored, want the prompt and the cut answer: %+v", len(msgs), msgs)
	}
	must(t, fmt.Sprintf("messages %+v", msgs),
		want{msgs[0].Role == history.User, "the prompt first"},
		want{msgs[1].Cut, "the answer marked cut"},
		want{msgs[1].Parts[0].Text == NoTextMarker, "the answer's text NoTextMarker"})
	r.srv.Push(providertest.Step{Text: "hi"})
	if tr, _ := r.turn("again"); tr.Text != "hi" {
		t.Fatalf("turn %+v", tr)
	}
	if sent := r.srv.Request(1)["messages"].([]any); len(sent) != 3 {
		t.Fatalf("the next request has %d messages: %v", len(sent), sent)
	}
}

func TestCancellingDuringToolsStoresTheirResults(t *testing.T) {
	started := make(chan struct{})
	slow := tool.MustFunc("slow--wait", "Waits.", func(ctx context.Context, in struct{}) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r := newRig(t, slow)
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "t1", Name: "slow--wait", Input: `{}`}}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := r.agent.Turn(ctx, r.id, "wait", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v (%T) from a turn cancelled during its tools is not context.Canceled", err, err)
	}
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	last := msgs[len(msgs)-1]
	must(t, fmt.Sprintf("last message %+v", last),
		want{last.Role == history.User, "the user's message"},
		want{last.Parts[0].Type == history.ToolResultPart, "its first part a tool result"},
		want{last.Parts[0].IsError, "that result an error"})
}

func TestEventsReportTextToolsAndUsage(t *testing.T) {
	r := newRig(t)
	r.write("a.txt", "x\n")
	r.srv.Push(providertest.Step{Text: "Looking.", ToolCalls: []providertest.ToolCall{readCall("t1", "a.txt")}, Input: 5, Output: 6, CacheRead: 7, CacheWrite: 8},
		providertest.Step{Text: "Done.", Input: 1, Output: 2})
	tr, events := r.turn("go")
	var kinds []string
	var text strings.Builder
	for _, e := range events {
		if e.Kind == TextDelta {
			text.WriteString(e.Text)
			continue
		}
		kinds = append(kinds, string(e.Kind))
	}
	if got := strings.Join(kinds, ","); got != "started,stored,usage,stored,tool_call,stored,tool_result,usage,stored" {
		t.Fatalf("events %s", got)
	}
	if text.String() != "Looking.Done." {
		t.Fatalf("text %q", text.String())
	}
	if tr.Usage != (history.Usage{Input: 6, Output: 8, CacheRead: 7, CacheWrite: 8}) {
		t.Fatalf("usage %+v", tr.Usage)
	}
}

var _ provider.Provider = (*anthropic.Provider)(nil)

func TestOpenConversationContinuesOrStarts(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.agent.System = "changed since"
	if err := r.agent.OpenConversation(ctx, r.id); err != nil {
		t.Fatal(err)
	}
	if c, _ := r.agent.Store.Get(ctx, r.id); c.System != DefaultSystem {
		t.Fatalf("a continued conversation got system %q", c.System)
	}
	if err := r.agent.OpenConversation(ctx, "fresh"); err != nil {
		t.Fatal(err)
	}
	if c, err := r.agent.Store.Get(ctx, "fresh"); err != nil || c.System != "changed since" {
		t.Fatalf("new conversation %+v, %v", c, err)
	}
}
