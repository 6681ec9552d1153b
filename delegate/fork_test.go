package delegate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// forkMark is in the first message of a forked child (ForkPrompt), and in
// no request of its parent's.
const forkMark = "forked from this conversation"

// forkRig is a parent agent with agent--delegate on one wire, a SQLite
// store and a workspace, whose fake server answers the parent by script
// and a forked child (its requests hold forkMark) with child. The parent
// has, besides the workspace tools, a tool no child is given
// (notes--list, Withhold) and one made again over each child's tools
// (notes--run, Over), as a program's background-script tools and
// code_execution are.
type forkRig struct {
	t     *testing.T
	dir   string
	srv   *providertest.Server
	ws    *workspace.Workspace
	store history.Store
	agent *agent.Agent
	d     *Delegate
	id    string

	mu        sync.Mutex
	parent    []providertest.Step
	sent      [][]byte // the parent's requests
	childSent [][]byte // the children's
	child     func(req providertest.Request) providertest.Step
	events    []agent.Event    // the children's
	ranOver   []*tool.Registry // the registry notes--run was made over, at each call
}

func newForkRig(t *testing.T, w testWire, lim Limits) *forkRig {
	t.Helper()
	r := &forkRig{t: t, srv: w.server(t)}
	r.srv.Respond = r.respond
	dir := t.TempDir()
	r.dir = dir
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	r.ws = ws
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r.store = store
	p, err := w.provider(r.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	list := tool.MustFunc("notes--list", "Lists the parent's notes.", func(context.Context, struct{}) (any, error) { return "the parent's notes", nil })
	run := func(reg *tool.Registry) *tool.Tool {
		return tool.MustFunc("notes--run", "Runs a note over these tools: "+strings.Join(reg.Names(), ", "), func(context.Context, struct{}) (any, error) {
			r.mu.Lock()
			r.ranOver = append(r.ranOver, reg)
			r.mu.Unlock()
			return "ran", nil
		})
	}
	reg := &tool.Registry{}
	r.d = &Delegate{Limits: lim, Withhold: []string{"notes--list"},
		Over: map[string]func(*tool.Registry) (*tool.Tool, error){"notes--run": func(reg *tool.Registry) (*tool.Tool, error) { return run(reg), nil }}}
	if err := reg.Add(append(ws.Tools(), list, run(reg), r.d.Tool())...); err != nil {
		t.Fatal(err)
	}
	r.agent = &agent.Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: w.model}
	r.d.Agent = r.agent
	r.d.On = func(_ string, e agent.Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
	}
	if r.id, err = r.agent.NewConversation(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *forkRig) respond(req providertest.Request) providertest.Step {
	r.mu.Lock()
	if bytes.Contains(req.Body, []byte(forkMark)) {
		r.childSent = append(r.childSent, req.Body)
		r.mu.Unlock()
		if r.child == nil {
			return providertest.Step{Text: "the child's answer"}
		}
		return r.child(req)
	}
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

func (r *forkRig) turn(prompt string) agent.TurnResult {
	r.t.Helper()
	tr, err := r.agent.Turn(context.Background(), r.id, prompt, nil)
	if err != nil {
		r.t.Fatalf("the parent's turn: %v", err)
	}
	return tr
}

// result is what the parent stored as call's result.
func (r *forkRig) result(call string) history.Part {
	r.t.Helper()
	msgs, err := r.store.Messages(context.Background(), r.id)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == history.ToolResultPart && p.CallID == call {
				return p
			}
		}
	}
	r.t.Fatalf("the parent stored no result for %s", call)
	return history.Part{}
}

// forking is a parent answer calling agent--delegate with input, as call.
func forking(call string, input map[string]any) providertest.Step {
	in, _ := json.Marshal(input)
	return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: call, Name: Name, Input: string(in)}}}
}

// script is the parent's side of a conversation whose second turn reads
// a file, then delegates "count the notes" with fork, then ends: its
// stored messages are hello, hi, go, the read call, its result, the
// delegate call (5) and its result, done.
func (r *forkRig) script() {
	r.parent = []providertest.Step{
		{Text: "hi"},
		{ToolCalls: []providertest.ToolCall{{ID: "call_r", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		forking("call_d", map[string]any{"task": "count the notes", "fork": true}),
		{Text: "done"},
	}
	if err := os.WriteFile(filepath.Join(r.dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.turn("hello")
	r.turn("go")
}

// A forked subagent's first request is its parent's last request — the
// one whose answer delegated — and the task: every member but the
// conversation byte for byte (model, system, tools, settings, the prompt
// cache key), and the conversation's messages byte for byte, the task
// after them. Where a wire sends consecutive messages of one role as one
// (the Anthropic wire and its platforms, Gemini), the task joins the
// parent's last message: its blocks come first, as they were, cache
// markers aside. The child's answer is the call's result. On all seven
// wires.
func TestAForkedSubagentsFirstRequestBeginsWithItsParentsLastRequest(t *testing.T) {
	for _, w := range testWires {
		t.Run(w.name, func(t *testing.T) {
			r := newForkRig(t, w, Limits{})
			r.child = func(providertest.Request) providertest.Step { return providertest.Step{Text: "There are 3 notes."} }
			r.script()
			if len(r.sent) != 4 || len(r.childSent) != 1 {
				t.Fatalf("%d parent requests and %d of a forked child; want 4 and 1", len(r.sent), len(r.childSent))
			}
			if res := r.result("call_d"); res.IsError || res.Text != "There are 3 notes." {
				t.Fatalf("the call's result %+v; want the child's answer", res)
			}
			parent, child := members(t, r.sent[2]), members(t, r.childSent[0])
			for k, v := range parent {
				if k != w.messages && !bytes.Equal(v, child[k]) {
					t.Errorf("member %q differs:\nparent %s\nchild  %s", k, v, child[k])
				}
			}
			for k := range child {
				if _, ok := parent[k]; !ok {
					t.Errorf("the child's request has %q, which its parent's has not", k)
				}
			}
			var pm, cm []json.RawMessage
			if err := json.Unmarshal(parent[w.messages], &pm); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(child[w.messages], &cm); err != nil {
				t.Fatal(err)
			}
			n := len(pm)
			if !w.merges {
				if len(cm) != n+1 {
					t.Fatalf("the child's request has %d messages; want its parent's %d and the task", len(cm), n)
				}
				for i := range n {
					if !bytes.Equal(pm[i], cm[i]) {
						t.Fatalf("message %d differs:\nparent %s\nchild  %s", i, pm[i], cm[i])
					}
				}
				if !bytes.Contains(cm[n], []byte("count the notes")) {
					t.Fatalf("the child's last message %s; want the task", cm[n])
				}
				return
			}
			if len(cm) != n {
				t.Fatalf("the child's request has %d messages; want its parent's %d, the task joining the last", len(cm), n)
			}
			for i := range n - 1 {
				if !bytes.Equal(pm[i], cm[i]) {
					t.Fatalf("message %d differs:\nparent %s\nchild  %s", i, pm[i], cm[i])
				}
			}
			pb, cb := blocks(t, pm[n-1], w.content), blocks(t, cm[n-1], w.content)
			if len(cb) != len(pb)+1 || !reflect.DeepEqual(pb, cb[:len(pb)]) {
				t.Fatalf("the child's last message %s; want its parent's %s, cache markers aside, and the task after", cm[n-1], pm[n-1])
			}
			if task, _ := json.Marshal(cb[len(pb)]); !bytes.Contains(task, []byte("count the notes")) {
				t.Fatalf("the block after the parent's is %s; want the task", task)
			}
		})
	}
}

// members are a request body's members, as their bytes.
func members(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("a request body that is not a JSON object: %v", err)
	}
	return m
}

// blocks are a message's blocks (its member content), decoded, cache
// markers aside.
func blocks(t *testing.T, msg json.RawMessage, content string) []any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatal(err)
	}
	b, _ := providertest.StripCacheMarks(m[content]).([]any)
	return b
}

// A forked subagent's conversation is a fork of its parent's (Base) made
// before the answer that delegated (BaseAt: the messages the parent's
// request was built from), linked to the call like any child's (Parent,
// ParentCall), with its parent's system prompt; its own messages are the
// task, after ForkPrompt, and its answer. Its requests are sent with its
// parent's settings, so its turn says nothing of a lost cache; the tools
// it may not have keep their definitions and refuse, and a tool made
// over a child's tools is made over its own.
func TestAForkedSubagentContinuesItsParentFromBeforeTheDelegatingAnswer(t *testing.T) {
	r := newForkRig(t, testWires[0], Limits{})
	steps := []providertest.Step{
		{ToolCalls: []providertest.ToolCall{{ID: "k1", Name: "notes--list", Input: `{}`}, {ID: "k2", Name: "notes--run", Input: `{}`}}},
		{Text: "There are 3 notes."},
	}
	r.child = func(providertest.Request) providertest.Step {
		r.mu.Lock()
		defer r.mu.Unlock()
		s := steps[0]
		steps = steps[1:]
		return s
	}
	r.script()
	ctx := context.Background()
	kids, err := history.Children(ctx, r.store, r.id)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children %+v, %v; want one", kids, err)
	}
	kid := kids[0]
	parent, err := r.store.Get(ctx, r.id)
	if err != nil {
		t.Fatal(err)
	}
	if kid.Base != r.id || kid.BaseAt != 5 || kid.Parent != r.id || kid.ParentCall != "call_d" || kid.System != parent.System {
		t.Fatalf("the child's record %+v; want a fork of %s at 5 (before the answer holding call_d), linked to call_d, with its system prompt", kid, r.id)
	}
	pm, _ := r.store.Messages(ctx, r.id)
	cm, err := r.store.Messages(ctx, kid.ID)
	if err != nil || len(cm) < 7 {
		t.Fatalf("the child's messages %+v, %v", cm, err)
	}
	for i := range 5 {
		if !reflect.DeepEqual(pm[i].Parts, cm[i].Parts) {
			t.Fatalf("the child's message %d %+v; want its parent's %+v", i, cm[i], pm[i])
		}
	}
	if got := cm[5].Text(); cm[5].Role != history.User || got != ForkPrompt+"count the notes" {
		t.Fatalf("the child's first own message %q; want ForkPrompt and the task", got)
	}
	results := map[string]history.Part{}
	for _, m := range cm[5:] {
		for _, p := range m.Parts {
			if p.Type == history.ToolResultPart {
				results[p.CallID] = p
			}
		}
	}
	if p := results["k1"]; !p.IsError || !strings.Contains(p.Text, "notes--list is not given to subagents") {
		t.Errorf("the child's call of a withheld tool gave %+v; want it refused, saying so", p)
	}
	if p := results["k2"]; p.IsError || p.Text != "ran" || len(r.ranOver) != 1 || r.ranOver[0] == r.agent.Tools {
		t.Errorf("the child's call of notes--run gave %+v, run %d times; want it run once, over the child's tools, not its parent's", p, len(r.ranOver))
	}
	if res := r.result("call_d"); res.IsError || res.Text != "There are 3 notes." {
		t.Fatalf("the call's result %+v; want the child's answer", res)
	}
	for _, e := range r.events {
		if e.Kind == agent.Notice {
			t.Errorf("the child's turn said %q; want nothing (its settings are its parent's)", e.Text)
		}
	}
}

// fork with a store that keeps no forks (no history.Brancher) is an error
// result saying so, and makes no child.
func TestForkOnAStoreThatKeepsNoForksIsAnErrorResult(t *testing.T) {
	r := newForkRig(t, testWires[0], Limits{})
	r.agent.Store = struct{ history.Store }{r.store} // its Store methods alone
	r.script()
	res := r.result("call_d")
	if !res.IsError || !strings.Contains(res.Text, "keeps no forks") || !strings.Contains(res.Text, "without fork") {
		t.Fatalf("the call's result %+v; want an error saying the store keeps no forks and to call without fork", res)
	}
	if kids, _ := history.Children(context.Background(), r.store, r.id); len(kids) != 0 || len(r.childSent) != 0 {
		t.Fatalf("children %+v, %d requests of a forked child; want none", kids, len(r.childSent))
	}
}

// fork with tools, or with a model other than the parent's, is refused:
// a forked subagent's requests must begin as its parent's do, with its
// tools and on its model. The parent's own model may be named.
func TestForkWithToolsOrAnotherModelIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"tools", map[string]any{"task": "t", "fork": true, "tools": []string{"workspace--read"}}, "fork: true gives the subagent your tools"},
		{"no tools", map[string]any{"task": "t", "fork": true, "tools": []string{}}, "fork: true gives the subagent your tools"},
		{"another model", map[string]any{"task": "t", "fork": true, "model": "claude-other"}, "fork: true runs the subagent on your model"},
		{"its own model", map[string]any{"task": "t", "fork": true, "model": "claude-test"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newForkRig(t, testWires[0], Limits{})
			r.parent = []providertest.Step{forking("call_d", tc.input), {Text: "done"}}
			r.turn("go")
			res := r.result("call_d")
			if tc.want == "" {
				if res.IsError || len(r.childSent) != 1 {
					t.Fatalf("the call's result %+v after %d requests of a forked child; want its answer", res, len(r.childSent))
				}
				return
			}
			if !res.IsError || !strings.Contains(res.Text, tc.want) || len(r.childSent) != 0 {
				t.Fatalf("the call's result %+v after %d requests of a forked child; want none and an error saying %q", res, len(r.childSent), tc.want)
			}
		})
	}
}

// A script's call of agent--delegate is not in the conversation, which
// has no point to fork at for it: fork from it is refused, saying so;
// and Run outside any conversation has nothing to fork.
func TestForkFromAScriptOrOutsideAConversationIsRefused(t *testing.T) {
	var d *Delegate
	relay := tool.MustFunc("relay", "Calls agent--delegate as a script would.", func(ctx context.Context, in struct{}) (any, error) {
		reg := &tool.Registry{}
		if err := reg.Add(d.Tool()); err != nil {
			return nil, err
		}
		out := (&tool.Dispatcher{Tools: reg}).Call(ctx, tool.Call{ID: "script-1", Name: Name, Input: json.RawMessage(`{"task":"t","fork":true}`)})
		return out.Text, nil
	})
	r := newRig(t, Limits{}, relay)
	d = r.d
	r.child = func(task string, _ providertest.Request) providertest.Step {
		t.Errorf("a child ran (%q); want none", task)
		return providertest.Step{Text: "?"}
	}
	r.parent = []providertest.Step{{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "relay", Input: `{}`}}}, {Text: "done"}}
	r.turn("go")
	if got := r.results()["call_1"].Text; !strings.Contains(got, "not one of this conversation's messages") {
		t.Fatalf("the script's call gave %q; want fork refused, saying the call is not in the conversation", got)
	}
	if kids := r.children(); len(kids) != 0 {
		t.Fatalf("children %+v; want none", kids)
	}
	res := r.d.Tool().Handler(context.Background(), json.RawMessage(`{"task":"t","fork":true}`))
	if text, _ := res.Data.(string); !res.IsError || !strings.Contains(text, "no conversation to fork") {
		t.Fatalf("a call outside any conversation gave %+v; want an error saying there is no conversation to fork", res)
	}
}

// The tool's input schema and description say what fork does.
func TestTheInputSchemaDocumentsFork(t *testing.T) {
	tl := (&Delegate{}).Tool()
	fork, ok := tl.InputSchema.Properties["fork"]
	if !ok || fork.Type != "boolean" || !strings.Contains(fork.Description, "cached prefix") || !strings.Contains(fork.Description, "tools and model") {
		t.Fatalf("the schema's fork %+v; want a boolean described", fork)
	}
	if slicesContain(tl.InputSchema.Required, "fork") {
		t.Fatal("fork is required; want it optional")
	}
	if !strings.Contains(tl.Description, "fork: true") {
		t.Fatalf("the description %q does not say what fork does", tl.Description)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
