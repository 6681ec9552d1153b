package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/provider/providertest"
)

// flatPricer prices every model at $1 per million tokens of any kind.
type flatPricer struct{}

func (flatPricer) Cost(model string, u history.Usage) price.Cost {
	return price.Cost{Dollars: float64(u.Input+u.Output+u.CacheRead+u.CacheWrite) / 1e6, Known: true}
}

// withPricer makes the CLI's prices p (nil: none) for the test.
func withPricer(t *testing.T, p agent.Pricer) {
	old := pricer
	t.Cleanup(func() { pricer = old })
	pricer = nil
	if p != nil {
		pricer = func() (agent.Pricer, error) { return p, nil }
	}
}

func TestBudgetFlagsOutOfTheirRangeAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ANTHROPIC_API_KEY", "k")
	withPricer(t, flatPricer{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--max-turn-tokens", "-1", "hi"}, "--max-turn-tokens -1: give the most tokens of a turn, 1 or more, or 0 for no bound"},
		{[]string{"run", "--max-cost", "-0.5", "hi"}, "--max-cost -0.5: give an amount in US dollars above 0"},
		{[]string{"chat", "--max-conversation-cost", "NaN"}, "--max-conversation-cost NaN: give an amount in US dollars"},
		{[]string{"run", "--max-cost", "Inf", "hi"}, "--max-cost +Inf: give an amount"},
	} {
		args := append(append([]string{}, tc.args...), "--workspace", dir)
		out, errOut, code := cli(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".myelin")); err == nil {
		t.Error("a usage error made the workspace's .myelin: something started before the flags were checked")
	}
}

func TestACostBudgetOnAModelTheTableDoesNotPriceIsRefused(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "never"})
	withPricer(t, nil) // the session's table: the built-in one
	_, errOut, code := cli(t, "run", "--workspace", dir, "--model", "no-such-model-x", "--max-cost", "0.5", "hi")
	if code == 0 || !strings.Contains(errOut, "no-such-model-x") || len(srv.Requests()) != 0 {
		t.Fatalf("exit %d after %d requests, stderr %q; want a refusal naming the model the table does not price, and no request", code, len(srv.Requests()), errOut)
	}
}

// A cost budget is priced by the session's table: the built-in one, or
// --prices over it.
func TestACostBudgetIsPricedByThePricesFile(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	withPricer(t, nil)
	prices := filepath.Join(t.TempDir(), "prices.json")
	// $100 per million input tokens: the first request (a few thousand
	// tokens) fits a 1-dollar budget, the 40,000 the first answer
	// reports leave nothing of it for the next
	if err := os.WriteFile(prices, []byte(`{"models": {"budget-model": {"input": 100, "output": 0, "cache_read": 0, "cache_write": 0}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := fakeAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}, Input: 40000, Output: 10})
	_, errOut, code := cli(t, "run", "--workspace", dir, "--model", "budget-model", "--prices", prices, "--max-cost", "1", "read a.txt")
	if code != 0 || !strings.Contains(errOut, "the turn has cost $4.0000 of its budget of $1.0000") || len(srv.Requests()) != 1 {
		t.Fatalf("exit %d after %d requests, stderr %q; want 0 after 1, the budget priced by the file stopping the turn", code, len(srv.Requests()), errOut)
	}
}

// --max-turn-tokens and --max-cost end a turn before the request that
// would cross them, saying so; the conversation continues with a larger
// budget.
func TestRunStopsAtItsBudgetAndContinues(t *testing.T) {
	withPricer(t, flatPricer{})
	for _, budget := range [][]string{{"--max-turn-tokens", "60000"}, {"--max-cost", "0.06"}, {"--max-conversation-cost", "0.06"}} {
		t.Run(budget[0], func(t *testing.T) {
			dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
			srv := fakeAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}, Input: 40000, Output: 10})
			args := append([]string{"run", "--workspace", dir}, budget...)
			_, errOut, code := cli(t, append(args, "read a.txt")...)
			if code != 0 || !strings.Contains(errOut, "the turn stopped before its next request") || len(srv.Requests()) != 1 {
				t.Fatalf("exit %d after %d requests, stderr %q; want 0 after 1, saying the budget stopped the turn", code, len(srv.Requests()), errOut)
			}
			srv.Push(providertest.Step{Text: "alpha it says"})
			out, errOut, code := cli(t, "run", "--workspace", dir, "--continue", "go on")
			if code != 0 || out != "alpha it says\n" {
				t.Fatalf("the next turn: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}
