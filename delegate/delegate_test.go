package delegate

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// rig is a parent agent with agent--delegate, on a fake Anthropic server
// that answers the parent by script and each child by its task (child),
// a SQLite store and a workspace in a temporary directory.
type rig struct {
	t     *testing.T
	dir   string
	srv   *providertest.Server
	ws    *workspace.Workspace
	store history.Store
	agent *agent.Agent
	d     *Delegate
	id    string

	mu     sync.Mutex
	parent []providertest.Step // the parent's answers, in order
	child  func(task string, r providertest.Request) providertest.Step
	sent   [][]byte // the parent's requests
}

const parentID = "20261204-100000-parent00"

func newRig(t *testing.T, lim Limits, extra ...*tool.Tool) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir()}
	r.srv = providertest.NewAnthropic(t)
	r.srv.Respond = r.respond
	ws, err := workspace.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	r.ws = ws
	r.open(lim, extra...)
	if err := r.agent.OpenConversation(context.Background(), parentID); err != nil {
		t.Fatal(err)
	}
	r.id = parentID
	return r
}

// open makes the agent, its store and its delegate, as a process starting
// would.
func (r *rig) open(lim Limits, extra ...*tool.Tool) {
	r.t.Helper()
	store, err := sqlite.Open(filepath.Join(r.dir, ".myelin", "history.db"))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { store.Close() })
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: r.srv.URL, MaxRetries: -1})
	if err != nil {
		r.t.Fatal(err)
	}
	reg := &tool.Registry{}
	r.d = &Delegate{Limits: lim}
	if err := reg.Add(append(append(r.ws.Tools(), extra...), r.d.Tool())...); err != nil {
		r.t.Fatal(err)
	}
	r.store = store
	r.agent = &agent.Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: r.ws}, Model: "claude-test"}
	r.d.Agent = r.agent
}

// isChild reports whether a request is a child's: its system prompt is
// the subagents'.
func isChild(body []byte) bool { return bytes.Contains(body, []byte("You are a subagent")) }

// taskOf is a child request's task: its first message's text.
func taskOf(req providertest.Request) string {
	m, _ := req.Messages[0].(map[string]any)
	switch c := m["content"].(type) {
	case string:
		return c
	case []any:
		b, _ := c[0].(map[string]any)
		s, _ := b["text"].(string)
		return s
	}
	return ""
}

func (r *rig) respond(req providertest.Request) providertest.Step {
	if isChild(req.Body) {
		return r.child(taskOf(req), req)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, req.Body)
	if len(r.parent) == 0 {
		r.t.Errorf("the parent sent a request the script has no answer for: %s", req.Body)
		return providertest.Step{Text: "?"}
	}
	s := r.parent[0]
	r.parent = r.parent[1:]
	return s
}

// delegating is a parent answer that calls agent--delegate once per task,
// with call ids call_1, call_2...
func delegating(tasks ...string) providertest.Step {
	s := providertest.Step{}
	for i, task := range tasks {
		in, _ := json.Marshal(map[string]any{"task": task})
		s.ToolCalls = append(s.ToolCalls, providertest.ToolCall{ID: "call_" + string(rune('1'+i)), Name: Name, Input: string(in)})
	}
	return s
}

// results are the tool results the parent stored, by call id.
func (r *rig) results() map[string]history.Part {
	r.t.Helper()
	msgs, err := r.store.Messages(context.Background(), r.id)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]history.Part{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == history.ToolResultPart {
				out[p.CallID] = p
			}
		}
	}
	return out
}

func (r *rig) children() []history.Conversation {
	r.t.Helper()
	kids, err := history.Children(context.Background(), r.store, r.id)
	if err != nil {
		r.t.Fatal(err)
	}
	return kids
}

func (r *rig) turn(prompt string) agent.TurnResult {
	r.t.Helper()
	tr, err := r.agent.Turn(context.Background(), r.id, prompt, nil)
	if err != nil {
		r.t.Fatalf("the parent's turn: %v", err)
	}
	return tr
}

// Three calls of one round run three children at once, each in a
// conversation of its own linked to its call, under its own claim; the
// two that answer give their answers as the calls' results, as they are,
// and the one whose provider fails gives an error result saying so and
// naming its conversation, which keeps what it did.
func TestThreeSubagentsInOneRoundRunAtOnceAndOneFails(t *testing.T) {
	r := newRig(t, Limits{})
	var arrived sync.WaitGroup
	arrived.Add(3)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var once sync.Map
	r.child = func(task string, req providertest.Request) providertest.Step {
		if _, seen := once.LoadOrStore(task, true); !seen {
			arrived.Done()
			select { // the three are in flight together, or the round ran them one by one
			case <-all:
			case <-time.After(30 * time.Second):
				t.Errorf("child %q: the other children's requests never came while it waited: the calls did not run at once", task)
			}
		}
		switch task {
		case "count the Go files":
			return providertest.Step{Text: "There are 12 Go files.\nNone is generated."}
		case "read the changelog":
			return providertest.Step{Status: 500, ErrorMessage: "the provider is down"}
		}
		return providertest.Step{Text: "The README has 3 sections."}
	}
	r.parent = []providertest.Step{delegating("count the Go files", "read the changelog", "summarise the README"), {Text: "done"}}
	if tr := r.turn("look around"); tr.Text != "done" || tr.Rounds != 1 {
		t.Fatalf("turn %+v", tr)
	}
	kids := r.children()
	if len(kids) != 3 {
		t.Fatalf("%d children; want 3: %+v", len(kids), kids)
	}
	byCall := map[string]history.Conversation{}
	for _, k := range kids {
		byCall[k.ParentCall] = k
		if k.System != DefaultSystem {
			t.Errorf("child %s's system prompt %q", k.ID, k.System)
		}
	}
	res := r.results()
	if got := res["call_1"]; got.IsError || got.Text != "There are 12 Go files.\nNone is generated." {
		t.Errorf("call_1's result %+v; want the child's answer as it is", got)
	}
	if got := res["call_3"]; got.IsError || got.Text != "The README has 3 sections." {
		t.Errorf("call_3's result %+v", got)
	}
	failed := res["call_2"]
	if !failed.IsError || !strings.Contains(failed.Text, "the subagent failed") || !strings.Contains(failed.Text, "the provider is down") || !strings.Contains(failed.Text, byCall["call_2"].ID) {
		t.Errorf("call_2's result %+v; want an error saying what failed and naming conversation %s", failed, byCall["call_2"].ID)
	}
	for call, task := range map[string]string{"call_1": "count the Go files", "call_2": "read the changelog", "call_3": "summarise the README"} {
		msgs, err := r.store.Messages(context.Background(), byCall[call].ID)
		if err != nil || len(msgs) != 2 || msgs[0].Parts[0].Text != task {
			t.Errorf("child of %s: %d messages %+v, %v; want its task and its answer", call, len(msgs), msgs, err)
		}
	}
	if msgs, _ := r.store.Messages(context.Background(), byCall["call_2"].ID); len(msgs) == 2 && !msgs[1].Cut {
		t.Errorf("the failed child's answer %+v; want it stored as cut", msgs[1])
	}
}

// The parent's requests are byte for byte those it sends when a plain
// tool of the same name, description and schema gives the same result:
// the child changes nothing in what the parent sends (its cache).
func TestTheParentsRequestsAreThoseOfAPlainToolWithTheSameResult(t *testing.T) {
	const answer = "The build passes; 2 tests are skipped."
	steps := []providertest.Step{delegating("run the build"), {Text: "good"}}

	r := newRig(t, Limits{})
	r.child = func(string, providertest.Request) providertest.Step { return providertest.Step{Text: answer} }
	r.parent = append([]providertest.Step(nil), steps...)
	r.turn("build it")
	if len(r.children()) != 1 {
		t.Fatal("no child ran")
	}

	plain := newRig(t, Limits{})
	reg := &tool.Registry{}
	same := *r.d.Tool()
	p := &tool.Tool{Name: same.Name, Description: same.Description, InputSchema: same.InputSchema,
		Handler: func(context.Context, json.RawMessage) result.Result { return result.Result{Data: answer} }}
	if err := reg.Add(append(plain.ws.Tools(), p)...); err != nil {
		t.Fatal(err)
	}
	plain.agent.Tools = reg
	plain.parent = append([]providertest.Step(nil), steps...)
	plain.turn("build it")

	if len(r.sent) != 2 || len(plain.sent) != 2 {
		t.Fatalf("%d and %d parent requests; want 2 each", len(r.sent), len(plain.sent))
	}
	for i := range r.sent {
		if !bytes.Equal(r.sent[i], plain.sent[i]) {
			at := providertest.FirstDiff(r.sent[i], plain.sent[i])
			t.Errorf("parent request %d differs at byte %d:\n with a child: %s\n plain tool:   %s", i+1, at, r.sent[i][at:min(at+200, len(r.sent[i]))], plain.sent[i][at:min(at+200, len(plain.sent[i]))])
		}
	}
}

// Every child's requests have the same prefix before their task — the
// tools and the subagents' system prompt, byte for byte — whatever the
// parent's conversation, so that the provider caches it across children.
func TestChildrenShareAStablePrefixBeforeTheirTask(t *testing.T) {
	r := newRig(t, Limits{})
	var mu sync.Mutex
	bodies := map[string][]byte{}
	r.child = func(task string, req providertest.Request) providertest.Step {
		mu.Lock()
		bodies[task] = req.Body
		mu.Unlock()
		return providertest.Step{Text: "ok"}
	}
	r.parent = []providertest.Step{delegating("task one"), delegating("task two, longer"), {Text: "done"}}
	r.turn("go")
	if len(r.children()) != 2 {
		t.Fatalf("children %+v; want one per call, though both calls have the id call_1", r.children())
	}
	type prefix struct{ System, Tools json.RawMessage }
	var a, b prefix
	if err := json.Unmarshal(bodies["task one"], &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(bodies["task two, longer"], &b); err != nil {
		t.Fatal(err)
	}
	if len(a.System) == 0 || len(a.Tools) == 0 || !bytes.Equal(a.System, b.System) || !bytes.Equal(a.Tools, b.Tools) {
		t.Fatalf("the children's system prompts or tools differ:\n%s\n%s\n%s\n%s", a.System, b.System, a.Tools, b.Tools)
	}
}

// A child is given the parent's tools named by tools (a name may end in
// *), never agent--delegate at the depth limit; a name matching none is
// an error naming the tools it may have, and no child is made.
func TestAChildGetsTheToolsNamedAndNoDelegateAtTheDepthLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools []string
		depth int
		want  []string // tools in the child's request
		err   string
	}{
		{"all when left out", nil, 1, []string{"workspace--read", "workspace--grep", "workspace--write"}, ""},
		{"a pattern", []string{"workspace--*"}, 1, []string{"workspace--read", "workspace--glob"}, ""},
		{"by name", []string{"workspace--read"}, 1, []string{"workspace--read"}, ""},
		{"none", []string{}, 1, nil, ""},
		{"agent--delegate below the depth limit", []string{"workspace--read"}, 2, []string{"workspace--read", Name}, ""},
		{"an unknown name", []string{"workspace--read", "shell--run"}, 1, nil, `"shell--run", which match none of the tools a subagent may have: workspace--edit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Limits{Depth: tc.depth})
			var got []string
			r.child = func(task string, req providertest.Request) providertest.Step {
				var body struct{ Tools []struct{ Name string } }
				_ = json.Unmarshal(req.Body, &body)
				for _, tl := range body.Tools {
					got = append(got, tl.Name)
				}
				return providertest.Step{Text: "ok"}
			}
			in, _ := json.Marshal(map[string]any{"task": "t", "tools": tc.tools})
			if tc.tools == nil {
				in = []byte(`{"task":"t"}`)
			}
			r.parent = []providertest.Step{{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: Name, Input: string(in)}}}, {Text: "done"}}
			r.turn("go")
			res := r.results()["call_1"]
			if tc.err != "" {
				if !res.IsError || !strings.Contains(res.Text, tc.err) || len(r.children()) != 0 {
					t.Fatalf("result %+v, %d children; want an error saying %q and no child", res, len(r.children()), tc.err)
				}
				return
			}
			if res.IsError {
				t.Fatalf("result %+v", res)
			}
			has := map[string]bool{}
			for _, n := range got {
				has[n] = true
			}
			for _, n := range tc.want {
				if !has[n] {
					t.Errorf("the child's tools %v lack %s", got, n)
				}
			}
			if has[Name] != (tc.depth > 1) {
				t.Errorf("the child's tools %v: agent--delegate offered %v at depth limit %d", got, has[Name], tc.depth)
			}
			if tc.tools != nil && len(got) != len(tc.want) && !strings.HasSuffix(tc.tools[0], "*") {
				t.Errorf("the child's tools %v; want exactly %v", got, tc.want)
			}
		})
	}
}

// A call that reaches agent--delegate at the depth limit anyway (a
// script's call, whose registry is not the child's) is refused, saying
// why, and makes no child.
func TestACallAtTheDepthLimitIsRefused(t *testing.T) {
	r := newRig(t, Limits{Depth: 2})
	ctx := context.WithValue(context.Background(), depthKey{}, 2)
	res := r.d.Run(ctx, "more", nil, "")
	if !res.IsError || !strings.Contains(res.Data.(string), "subagents may nest 2 deep, and this conversation is 2 deep already") {
		t.Fatalf("result %+v", res)
	}
	if kids := r.children(); len(kids) != 0 {
		t.Fatalf("children %+v", kids)
	}
}

// A tool that runs over its registry's tools (code_execution) is made
// again over the child's: a child given it and one other tool can reach
// only that one.
func TestAToolOverTheRegistryIsMadeOverTheChilds(t *testing.T) {
	r := newRig(t, Limits{})
	var over []string
	mk := func(reg *tool.Registry) (*tool.Tool, error) {
		over = reg.Names()
		return tool.MustFunc("code_execution", "Runs code.", func(context.Context, struct{}) (any, error) { return "ran", nil }), nil
	}
	r.d.Over = map[string]func(*tool.Registry) (*tool.Tool, error){"code_execution": mk}
	if err := r.agent.Tools.Add(tool.MustFunc("code_execution", "Runs code.", func(context.Context, struct{}) (any, error) { return "parent's", nil })); err != nil {
		t.Fatal(err)
	}
	r.child = func(string, providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
	r.parent = []providertest.Step{{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: Name, Input: `{"task":"t","tools":["code_execution","workspace--read"]}`}}}, {Text: "done"}}
	r.turn("go")
	if strings.Join(over, ",") != "workspace--read" {
		t.Fatalf("code_execution was made over %v; want the child's other tool alone", over)
	}
}

// Each limit, reached, stops the child with its conversation valid and
// gives an error result naming the limit and the conversation.
func TestAChildThatReachesALimitFailsSayingWhich(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	for _, tc := range []struct {
		name  string
		lim   Limits
		child providertest.Step
		want  string
	}{
		{"rounds", Limits{Rounds: 2}, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c", Name: "workspace--list", Input: `{}`}}},
			"it reached its limit of 2 tool rounds before its final answer"},
		{"tokens", Limits{Tokens: 1000}, providertest.Step{Input: 900, Output: 200, ToolCalls: []providertest.ToolCall{{ID: "c", Name: "workspace--list", Input: `{}`}}},
			"used 1100 tokens together, over their shared budget of 1000 (myelin's --delegate-tokens), before its final answer; its own requests used 1100"},
		{"time", Limits{Time: 50 * time.Millisecond}, providertest.Step{Hold: hold, Text: "late"},
			"it reached its time limit of 50ms before its final answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.lim)
			n := 0
			r.child = func(string, providertest.Request) providertest.Step {
				n++
				s := tc.child
				if len(s.ToolCalls) > 0 {
					s.ToolCalls = []providertest.ToolCall{{ID: "c" + string(rune('0'+n)), Name: s.ToolCalls[0].Name, Input: s.ToolCalls[0].Input}}
				}
				return s
			}
			r.parent = []providertest.Step{delegating("loop"), {Text: "done"}}
			r.turn("go")
			kids := r.children()
			if len(kids) != 1 {
				t.Fatalf("%d children", len(kids))
			}
			res := r.results()["call_1"]
			if !res.IsError || !strings.Contains(res.Text, tc.want) || !strings.Contains(res.Text, kids[0].ID) {
				t.Fatalf("result %+v; want an error saying %q naming %s", res, tc.want, kids[0].ID)
			}
			// the child's conversation is valid: every call answered
			msgs, err := r.store.Messages(context.Background(), kids[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if last := msgs[len(msgs)-1]; len(last.ToolCalls()) > 0 {
				t.Fatalf("the child's conversation ends with calls unanswered: %+v", last)
			}
		})
	}
}

// After a crash during the parent's round, the parent's recovery runs the
// delegate call again: it finds the child the first run made and gives
// its final answer when it had one, with no request; a child that had not
// answered is recovered (its calls answered) and the call's result says
// it was interrupted, naming it. No second child is made.
func TestAfterACrashTheParentReusesItsChildsAnswerOrSaysItWasInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		child    []history.Message // what the child had stored when the process died
		want     string
		isError  bool
		recovers bool // the child's last call is answered by the recovery
	}{
		{"answered", []history.Message{
			{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "count"}}},
			{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "7 files"}}},
		}, "7 files", false, false},
		{"mid-round", []history.Message{
			{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "count"}}},
			{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "let me look"}, {Type: history.ToolCallPart, CallID: "k1", Name: "workspace--write", Input: json.RawMessage(`{"path":"x","content":"y"}`)}}},
		}, "the process running it stopped before its final answer, and it was not continued", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			ctx := context.Background()
			// what the parent had stored: the prompt and the call
			if err := r.store.Append(ctx, r.id,
				history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}},
				history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_1", Name: Name, Input: json.RawMessage(`{"task":"count"}`)}}}); err != nil {
				t.Fatal(err)
			}
			if err := r.store.Create(ctx, history.Conversation{ID: "child-1", System: DefaultSystem, Parent: r.id, ParentCall: "call_1"}); err != nil {
				t.Fatal(err)
			}
			if err := r.store.Append(ctx, "child-1", tc.child...); err != nil {
				t.Fatal(err)
			}
			r.open(Limits{}) // a new process
			r.child = func(task string, _ providertest.Request) providertest.Step {
				t.Errorf("a child sent a request (%q): none should run", task)
				return providertest.Step{Text: "?"}
			}
			rec, err := r.agent.Recover(ctx, r.id)
			if err != nil || rec.Rerun != 1 {
				t.Fatalf("recovery %+v, %v; want the call run again", rec, err)
			}
			res := r.results()["call_1"]
			if res.IsError != tc.isError || !strings.Contains(res.Text, tc.want) || (tc.isError && !strings.Contains(res.Text, "child-1")) {
				t.Fatalf("result %+v; want %q (error %v)", res, tc.want, tc.isError)
			}
			if kids := r.children(); len(kids) != 1 {
				t.Fatalf("children %+v; want the first run's alone", kids)
			}
			msgs, _ := r.store.Messages(ctx, "child-1")
			if answered := len(msgs) == len(tc.child)+1; answered != tc.recovers {
				t.Fatalf("the child holds %d messages after the recovery; its call answered: %v, want %v", len(msgs), answered, tc.recovers)
			}
		})
	}
}

// A call that is not one of the parent's messages — a script's, whose
// ids are its own — never takes an earlier child for its own, even one
// linked to the same id: each such call starts its child.
func TestACallOutsideTheParentsMessagesStartsItsOwnChild(t *testing.T) {
	var d *Delegate
	relay := tool.MustFunc("relay", "Calls agent--delegate as a script would.", func(ctx context.Context, in struct {
		Task string `json:"task"`
	}) (any, error) {
		reg := &tool.Registry{}
		if err := reg.Add(d.Tool()); err != nil {
			return nil, err
		}
		raw, _ := json.Marshal(map[string]string{"task": in.Task})
		out := (&tool.Dispatcher{Tools: reg}).Call(ctx, tool.Call{ID: "script-1", Name: Name, Input: raw})
		return out.Text, nil
	})
	r := newRig(t, Limits{}, relay)
	d = r.d
	r.child = func(task string, _ providertest.Request) providertest.Step {
		return providertest.Step{Text: "did " + task}
	}
	r.parent = []providertest.Step{
		{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "relay", Input: `{"task":"first"}`}}},
		{ToolCalls: []providertest.ToolCall{{ID: "call_2", Name: "relay", Input: `{"task":"second"}`}}},
		{Text: "done"},
	}
	r.turn("go")
	res := r.results()
	if res["call_1"].Text != "did first" || res["call_2"].Text != "did second" {
		t.Fatalf("results %q, %q; want each call's own child's answer", res["call_1"].Text, res["call_2"].Text)
	}
	if kids := r.children(); len(kids) != 2 || kids[0].ParentCall != "script-1" {
		t.Fatalf("children %+v; want two, linked to script-1", kids)
	}
}

// A negative limit set in Go is refused, naming it, not taken for the
// default without a word.
func TestANegativeLimitIsRefusedNamingIt(t *testing.T) {
	r := newRig(t, Limits{Tokens: -5})
	res := r.d.Run(context.Background(), "t", nil, "")
	if !res.IsError || !strings.Contains(res.Data.(string), "the subagents' tokens limit is -5") {
		t.Fatalf("result %+v", res)
	}
}
