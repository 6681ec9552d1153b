package delegate

import (
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/provider/providertest"
)

// Issue 31: a subagent spends from the budget of the turn whose call
// started it. Its requests are charged to that turn as they come, so the
// turn's next check counts them: a parent whose child used most of its
// budget of 5,000 tokens (1,010 its own, 3,910 its child's) stops before
// its next request, reason budget.
func TestASubagentsRequestsAreChargedToItsCallersTurnBudget(t *testing.T) {
	r := newRig(t, Limits{})
	r.agent.MaxTurnTokens = 5000
	r.child = func(string, providertest.Request) providertest.Step {
		return providertest.Step{Text: "the child's answer", Input: 3900, Output: 10}
	}
	first := delegating("work")
	first.Input, first.Output = 1000, 10
	r.parent = []providertest.Step{first, {Text: "done"}}
	tr := r.turn("go")
	if res := r.results()["call_1"]; res.IsError {
		t.Fatalf("the child's call failed: %s", res.Text)
	}
	if tr.Reason != agent.BudgetReached || len(r.sent) != 1 {
		t.Fatalf("the parent's turn ended %q after %d requests; want %q after 1, its child's 3,910 tokens counted in its budget", tr.Reason, len(r.sent), agent.BudgetReached)
	}
}

// A subagent is given what remains of its caller's budget as its own
// ceiling: a child whose first answer alone uses more than the 3,990
// tokens its parent had left stops there, and its call's error says why.
func TestASubagentRunsUnderWhatRemainsOfItsCallersBudget(t *testing.T) {
	r := newRig(t, Limits{Rounds: 3})
	r.agent.MaxTurnTokens = 5000
	n := 0
	r.child = func(string, providertest.Request) providertest.Step {
		n++
		return providertest.Step{Input: 4000, Output: 10, ToolCalls: []providertest.ToolCall{{ID: "c" + string(rune('0'+n)), Name: "workspace--list", Input: `{}`}}}
	}
	first := delegating("work")
	first.Input, first.Output = 1000, 10
	r.parent = []providertest.Step{first, {Text: "done"}}
	r.turn("go")
	res := r.results()["call_1"]
	if !res.IsError || !strings.Contains(res.Text, "what remained of its calling turn's budgets") || n != 1 {
		t.Fatalf("the child made %d requests and its call gave %+v; want one request, then an error saying it reached what remained of its caller's budget", n, res)
	}
}

// A call that finds its caller's budget spent (by a sibling subagent of
// the same round, here the one that ran first: one runs at a time) starts
// no subagent, and its error says why.
func TestNoSubagentStartsWhenItsCallersBudgetIsSpent(t *testing.T) {
	r := newRig(t, Limits{Running: 1})
	r.agent.MaxTurnTokens = 5000
	var mu sync.Mutex
	asked := 0
	r.child = func(string, providertest.Request) providertest.Step {
		mu.Lock()
		defer mu.Unlock()
		asked++
		return providertest.Step{Text: "the child's answer", Input: 3990, Output: 10}
	}
	first := delegating("one", "two")
	first.Input, first.Output = 1000, 10
	r.parent = []providertest.Step{first, {Text: "done"}}
	r.turn("go")
	res := r.results()
	refused := 0
	for _, id := range []string{"call_1", "call_2"} {
		if p := res[id]; p.IsError && strings.Contains(p.Text, "the subagent was not started: the calling turn has used 5010 tokens of its budget of 5000, its subagents' included") {
			refused++
		}
	}
	if refused != 1 || asked != 1 {
		t.Fatalf("%d calls refused, %d child requests (results %+v); want the second call refused, the caller's budget spent by the first", refused, asked, res)
	}
}
