package delegate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
)

// until waits for cond, checking it every few milliseconds; a hang guard,
// not a measure: the test fails only when cond never comes.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for stop := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(stop) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// One code_execution call started 300 subagents at once (~1,200 requests
// in 8.8 s), each of which could spend the whole token limit. Now at most
// Limits.Running run at once, the others waiting for a place, and all of
// them draw on one budget of Limits.Tokens: once it is spent the running
// ones stop and no more start.
func TestAScriptThatDelegates300TimesRunsAFewAtOnceOnOneBudget(t *testing.T) {
	const calls, running, perRequest, budget = 300, 4, 1000, 10 * 1000
	r := newRig(t, Limits{Running: running, Tokens: budget})
	reg := r.agent.Tools
	if err := reg.Add(script.Tool(script.Config{Tools: reg, Env: result.Env{Store: r.ws}})); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	var inside, most, served atomic.Int32
	r.child = func(task string, _ providertest.Request) providertest.Step {
		n := inside.Add(1)
		defer inside.Add(-1)
		served.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-gate
		return providertest.Step{Text: "did " + task, Input: perRequest}
	}
	code := fmt.Sprintf(`const all = await Promise.all(Array.from({length: %d}, (_, i) => tools["agent--delegate"]({task: "task " + i})));
const failed = all.filter(r => r.isError).map(r => r.content[0].text);
const refused = failed.filter(t => t.includes("their shared budget of %d (myelin's --delegate-tokens): no more subagents can start"));
return {answered: all.length - failed.length, refused: refused.length, other: failed.filter(t => !refused.includes(t)).slice(0, 3)};`, calls, budget)
	in, _ := json.Marshal(map[string]string{"code": code})
	r.parent = []providertest.Step{{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: script.Name, Input: string(in)}}}, {Text: "done"}}
	turned := make(chan struct{})
	go func() {
		defer close(turned)
		r.turn("go")
	}()
	// Either every child is in a request at once (no bound), or the
	// limit's worth are, and the others wait for a place.
	until(t, "the children to be in their requests or waiting for a place", func() bool {
		return inside.Load() == calls || (inside.Load() == running && r.d.waiting.Load() == calls-running)
	})
	close(gate)
	<-turned
	if n := most.Load(); n > running {
		t.Errorf("%d subagents were in a request at once, over the limit of %d running", n, running)
	}
	// Each child makes one request: the tokens spent are those of the
	// requests served. The requests in flight when the budget is passed
	// (one per running child at most) are the overshoot.
	spent := int(served.Load()) * perRequest
	if spent > budget+running*perRequest {
		t.Errorf("the children spent %d tokens together, over the budget of %d and the overshoot of %d requests in flight", spent, budget, running)
	}
	var out struct {
		Answered, Refused int
		Other             []string
	}
	res := r.results()["call_1"]
	if err := json.Unmarshal([]byte(res.Text), &out); err != nil {
		t.Fatalf("the script's result %q: %v", res.Text, err)
	}
	// Those stopped when another passed the budget fail too (other).
	if out.Answered == 0 || out.Refused == 0 || out.Answered+out.Refused > calls {
		t.Errorf("%d answered and %d refused for the spent budget, of %d calls (others: %q); want some of each", out.Answered, out.Refused, calls, out.Other)
	}
	if n := r.d.waiting.Load(); n != 0 {
		t.Errorf("%d calls still wait for a place after the turn", n)
	}
	if n := len(r.d.slots); n != 0 {
		t.Errorf("%d places still taken after the turn", n)
	}
}

// A call that finds no place waits for one within its time limit, and
// says so when none came, naming the limit and its flag; a child's own
// call is refused at once (its parent holds a place while it would wait);
// a limit past MaxRunning is refused.
func TestACallThatFindsNoPlaceSaysWhichLimit(t *testing.T) {
	t.Run("waiting past the time limit, or cancelled", func(t *testing.T) {
		r := newRig(t, Limits{Running: 1, Time: 100 * time.Millisecond})
		r.child = func(string, providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
		free, _ := r.d.place(context.Background(), 0, r.d.Limits.Or()) // another call's child holds the one place
		res := r.d.Run(context.Background(), "t", nil, "")
		if text, _ := res.Data.(string); !res.IsError || !strings.Contains(text, "the subagent did not start: all 1 subagents this process may run at once (myelin's --delegate-running) were running for its whole time limit of 100ms") {
			t.Errorf("waiting past its time limit: %q (error %v)", text, res.IsError)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res = r.d.Run(ctx, "t", nil, "")
		if text, _ := res.Data.(string); !res.IsError || !strings.Contains(text, "cancelled while it waited for a place") {
			t.Errorf("cancelled while waiting: %q (error %v)", text, res.IsError)
		}
		if n := len(r.children()); n != 0 {
			t.Errorf("%d children made by calls that never had a place", n)
		}
		free()
		// the child now runs, a turn on the fake: 100ms is too short for
		// it on a loaded machine (CI once took longer), and this part is
		// about the place, not the time
		r.d.Limits.Time = time.Minute
		if res := r.d.Run(context.Background(), "t", nil, ""); res.IsError {
			t.Errorf("with the place free: %v", res.Data)
		}
	})
	t.Run("a child's own call", func(t *testing.T) {
		r := newRig(t, Limits{Running: 1, Depth: 2})
		var got string
		r.child = func(task string, req providertest.Request) providertest.Step {
			if task == "inner" {
				return providertest.Step{Text: "the inner child ran"}
			}
			if len(req.Messages) == 1 {
				return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: Name, Input: `{"task":"inner"}`}}}
			}
			got = string(req.Body)
			return providertest.Step{Text: "done myself"}
		}
		r.parent = []providertest.Step{delegating("outer"), {Text: "done"}}
		r.turn("go")
		if want := "a subagent's own subagent does not wait for a place, as its parent holds one the while: do this task yourself"; !strings.Contains(got, want) {
			t.Errorf("the child's request after its call: %.600s\nwant the refusal %q", got, want)
		}
	})
	t.Run("past the most", func(t *testing.T) {
		r := newRig(t, Limits{Running: MaxRunning + 1})
		if res := r.d.Run(context.Background(), "t", nil, ""); !res.IsError || !strings.Contains(res.Data.(string), "the subagents' running limit is 1001: it must be at most 1000") {
			t.Errorf("result %+v", res)
		}
	})
}
