package delegate

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// A forked subagent is bounded as any child is: its requests (its
// parent's context in each) draw on the round's token budget, and a
// call it makes past the depth limit is refused, though agent--delegate
// is among its tools (its requests carry its parent's).
func TestAForkedSubagentIsBoundedAsAnyChild(t *testing.T) {
	t.Run("the token budget", func(t *testing.T) {
		r := newForkRig(t, testWires[0], Limits{Tokens: 50})
		r.child = func(providertest.Request) providertest.Step {
			return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "k1", Name: "workspace--list", Input: `{}`}}, Input: 100}
		}
		r.script()
		res := r.result("call_d")
		if !res.IsError || !strings.Contains(res.Text, "over their shared budget of 50") || len(r.childSent) != 1 {
			t.Fatalf("the call's result %+v after %d requests of the child; want one, then the token limit", res, len(r.childSent))
		}
	})
	t.Run("the depth limit", func(t *testing.T) {
		r := newForkRig(t, testWires[0], Limits{})
		calls := 0
		r.child = func(providertest.Request) providertest.Step {
			r.mu.Lock()
			defer r.mu.Unlock()
			if calls++; calls == 1 {
				return forking("k1", map[string]any{"task": "deeper", "fork": true})
			}
			return providertest.Step{Text: "did it myself"}
		}
		r.script()
		kids, _ := history.Children(context.Background(), r.store, r.id)
		if len(kids) != 1 {
			t.Fatalf("children %+v; want one", kids)
		}
		msgs, _ := r.store.Messages(context.Background(), kids[0].ID)
		var got *history.Part
		for _, m := range msgs[kids[0].BaseAt:] {
			for i, p := range m.Parts {
				if p.Type == history.ToolResultPart && p.CallID == "k1" {
					got = &m.Parts[i]
				}
			}
		}
		if got == nil || !got.IsError || !strings.Contains(got.Text, "subagents may nest 1 deep") {
			t.Fatalf("the forked child's own call of agent--delegate gave %+v; want it refused at the depth limit", got)
		}
		if grand, _ := history.Children(context.Background(), r.store, kids[0].ID); len(grand) != 0 {
			t.Fatalf("the child has children %+v; want none", grand)
		}
	})
}

// A child's own call with fork forks the child's conversation, not its
// parent's: the grandchild's requests are sent as the child's, with its
// system prompt (DefaultSystem) and tools, byte for byte.
func TestASubagentsForkForksTheSubagent(t *testing.T) {
	r := newForkRig(t, testWires[0], Limits{Depth: 2})
	var mu sync.Mutex
	var child, grand [][]byte
	childSteps := []providertest.Step{forking("call_g", map[string]any{"task": "count the notes", "fork": true}), {Text: "the child is done"}}
	parentSteps := []providertest.Step{delegating("look deeper"), {Text: "done"}}
	r.srv.Respond = func(req providertest.Request) providertest.Step {
		mu.Lock()
		defer mu.Unlock()
		steps := &parentSteps
		switch {
		case bytes.Contains(req.Body, []byte(forkMark)):
			grand = append(grand, req.Body)
			return providertest.Step{Text: "3 notes"}
		case isChild(req.Body):
			child = append(child, req.Body)
			steps = &childSteps
		}
		if len(*steps) == 0 {
			t.Errorf("a request the script has no answer for: %s", req.Body)
			return providertest.Step{Text: "?"}
		}
		s := (*steps)[0]
		*steps = (*steps)[1:]
		return s
	}
	r.turn("go")
	ctx := context.Background()
	kids, _ := history.Children(ctx, r.store, r.id)
	if len(kids) != 1 || kids[0].Base != "" {
		t.Fatalf("children %+v; want one, not forked", kids)
	}
	grands, _ := history.Children(ctx, r.store, kids[0].ID)
	if len(grands) != 1 || grands[0].Base != kids[0].ID || grands[0].BaseAt != 1 || grands[0].ParentCall != "call_g" || grands[0].System != DefaultSystem {
		t.Fatalf("the child's children %+v; want one, a fork of %s at 1, linked to call_g, with the subagents' system prompt", grands, kids[0].ID)
	}
	if len(child) != 2 || len(grand) != 1 {
		t.Fatalf("%d requests of the child and %d of the grandchild; want 2 and 1", len(child), len(grand))
	}
	c, g := members(t, child[0]), members(t, grand[0])
	for _, k := range []string{"system", "tools", "model", "max_tokens"} {
		if !bytes.Equal(c[k], g[k]) {
			t.Errorf("%s differs:\nchild      %s\ngrandchild %s", k, c[k], g[k])
		}
	}
	res := r.results(ctx)
	if res["call_1"].Text != "the child is done" {
		t.Fatalf("the parent's result %+v", res["call_1"])
	}
	cm, _ := r.store.Messages(ctx, kids[0].ID)
	var got string
	for _, m := range cm {
		for _, p := range m.Parts {
			if p.Type == history.ToolResultPart && p.CallID == "call_g" {
				got = p.Text
			}
		}
	}
	if got != "3 notes" {
		t.Fatalf("the child's result of call_g %q; want the grandchild's answer", got)
	}
}

// results are the tool results the parent stored, by call id.
func (r *forkRig) results(ctx context.Context) map[string]history.Part {
	msgs, _ := r.store.Messages(ctx, r.id)
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

// After a crash, a forked child that had answered gives its answer again,
// its rounds and usage its own: the messages it shares with its parent
// are not counted as its.
func TestARecoveredForkedSubagentCountsItsOwnMessagesOnly(t *testing.T) {
	r := newRig(t, Limits{})
	ctx := context.Background()
	call := func(id, name, input string) history.Part {
		return history.Part{Type: history.ToolCallPart, CallID: id, Name: name, Input: json.RawMessage(input)}
	}
	if err := r.store.Append(ctx, r.id,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{call("k0", "workspace--list", `{}`)}, Usage: &history.Usage{Input: 1000}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "k0", Text: "a.txt"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{call("call_1", Name, `{"task":"count","fork":true}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.(history.Brancher).Fork(ctx, history.Conversation{ID: "child-1", Base: r.id, BaseAt: 3, Parent: r.id, ParentCall: "call_1"}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Append(ctx, "child-1",
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: ForkPrompt + "count"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "7 files"}}, Usage: &history.Usage{Output: 5}}); err != nil {
		t.Fatal(err)
	}
	r.open(Limits{}) // a new process
	res, found := r.d.again(ctx, r.d.child(r.agent, &tool.Registry{}, "", Limits{}.Or()), r.id, "call_1")
	out, _ := res.Structured.(Outcome)
	if !found || res.IsError || res.Data != "7 files" || out.Rounds != 0 || out.Usage != (history.Usage{Output: 5}) || !out.Reused {
		t.Fatalf("the call run again gave %+v (found %v); want the child's answer, 0 rounds and its own usage, reused", res, found)
	}
	r.child = func(task string, _ providertest.Request) providertest.Step {
		t.Errorf("a child sent a request (%q): none should run", task)
		return providertest.Step{Text: "?"}
	}
	if rec, err := r.agent.Recover(ctx, r.id); err != nil || rec.Rerun != 1 {
		t.Fatalf("recovery %+v, %v; want the call run again", rec, err)
	}
	if got := r.results()["call_1"]; got.IsError || got.Text != "7 files" {
		t.Fatalf("the call's result after the recovery %+v; want the child's answer", got)
	}
}

// Two calls with fork in one answer make two children, each a fork of
// the parent at the same point (before that answer), each answering its
// own call.
func TestTwoForksOfOneRoundPartAtTheSamePoint(t *testing.T) {
	r := newForkRig(t, testWires[0], Limits{})
	r.child = func(req providertest.Request) providertest.Step {
		if bytes.Contains(req.Body, []byte("task two")) {
			return providertest.Step{Text: "two done"}
		}
		return providertest.Step{Text: "one done"}
	}
	two := forking("call_1", map[string]any{"task": "task one", "fork": true})
	two.ToolCalls = append(two.ToolCalls, forking("call_2", map[string]any{"task": "task two", "fork": true}).ToolCalls...)
	r.parent = []providertest.Step{two, {Text: "done"}}
	r.turn("go")
	kids, _ := history.Children(context.Background(), r.store, r.id)
	if len(kids) != 2 || len(r.childSent) != 2 {
		t.Fatalf("children %+v after %d requests; want two, one request each", kids, len(r.childSent))
	}
	for _, k := range kids {
		if k.Base != r.id || k.BaseAt != 1 {
			t.Errorf("child %+v; want a fork of %s at 1", k, r.id)
		}
	}
	res := r.results(context.Background())
	if res["call_1"].Text != "one done" || res["call_2"].Text != "two done" {
		t.Fatalf("results %q, %q; want each child's answer to its own call", res["call_1"].Text, res["call_2"].Text)
	}
}

// A child runs on its parent's settings of how it meets a failing
// provider: the time its requests may be sent again for (RetryFor), as
// the refusal guard and the lease.
func TestAChildResendsForAsLongAsItsParent(t *testing.T) {
	d := &Delegate{}
	p := &agent.Agent{RetryFor: 90 * time.Second, RefusalGuard: true, Lease: time.Minute}
	c := d.child(p, &tool.Registry{}, "", Limits{}.Or())
	if c.RetryFor != p.RetryFor || c.RefusalGuard != p.RefusalGuard || c.Lease != p.Lease {
		t.Fatalf("the child's RetryFor %v, RefusalGuard %v, Lease %v; want the parent's %v, %v, %v", c.RetryFor, c.RefusalGuard, c.Lease, p.RetryFor, p.RefusalGuard, p.Lease)
	}
}
