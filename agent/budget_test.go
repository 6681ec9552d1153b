package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/window"
)

// fakePricer prices claude-test (the rigs' model) at $1 per million
// input tokens, $1.25 written to the cache, $0.10 read from it and $5
// output; any other model has no price.
type fakePricer struct{}

func (fakePricer) Cost(model string, u history.Usage) price.Cost {
	if model != "claude-test" {
		return price.Cost{}
	}
	d := float64(u.Input)*1 + float64(u.CacheWrite)*1.25 + float64(u.CacheRead)*0.1 + float64(u.Output)*5
	return price.Cost{Dollars: d / 1e6, Known: true}
}

// budgetCall is a first answer that asks to read a.txt and reports 40000
// input tokens and 10 output tokens ($0.04005 at fakePricer's prices).
func budgetCall() providertest.Step {
	return providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}, Input: 40000, Output: 10}
}

// budgetRig is a rig on wire with a.txt to read and a window that holds
// budgetCall's request.
func budgetRig(t *testing.T, wire string) *rig {
	r := newWireRig(t, wire)
	r.write("a.txt", "alpha\n")
	r.agent.ContextWindow = 1 << 20
	return r
}

// noticeHas reports whether a Notice event's text holds s.
func noticeHas(events []Event, s string) bool {
	for _, e := range events {
		if e.Kind == Notice && strings.Contains(e.Text, s) {
			return true
		}
	}
	return false
}

// continuesWithLargerBudget runs a next turn on r after a turn a budget
// ended, with the budgets lifted, and checks it reaches the model with
// what the budget left stored, and ends as the model ends it.
func continuesWithLargerBudget(t *testing.T, r *rig, want ...string) {
	t.Helper()
	r.agent.MaxTurnTokens, r.agent.MaxCost, r.agent.MaxConversationCost = 0, 0, 0
	sent := len(r.srv.Requests())
	r.srv.Push(providertest.Step{Text: "done"})
	tr, _ := r.turn("go on")
	if tr.Reason != "end_turn" || tr.Text != "done" {
		t.Fatalf("the turn after the budget's ended %+v, want end_turn with the model's text", tr)
	}
	body := string(r.srv.Requests()[sent])
	for _, w := range append(want, "go on") {
		if !strings.Contains(body, w) {
			t.Errorf("the next turn's request does not carry %q: %s", w, body)
		}
	}
}

func TestBudgetsOnEveryWire(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			t.Run("a request the token budget cannot hold is not sent; the turn ends with the reason stored", func(t *testing.T) {
				r := budgetRig(t, wire)
				r.agent.MaxTurnTokens = 60000
				r.srv.Push(budgetCall())
				tr, events := r.turn("read a.txt")
				if tr.Reason != BudgetReached || tr.Rounds != 1 {
					t.Fatalf("turn %+v, want reason %q after 1 round", tr, BudgetReached)
				}
				if n := len(r.srv.Requests()); n != 1 {
					t.Fatalf("%d requests sent, want 1: the second would cross the budget", n)
				}
				msgs := r.stored()
				last := msgs[len(msgs)-1]
				if last.Role != history.Assistant || !strings.HasPrefix(textOf(last), BudgetMarker) || !strings.Contains(textOf(last), "budget of 60000 tokens") {
					t.Fatalf("the last stored message is %+v, want an answer saying the token budget stopped the turn", last)
				}
				if r := msgs[len(msgs)-2]; !r.HoldsResults() || r.Parts[0].IsError {
					t.Fatalf("the round's results are not stored as run before the stop: %+v", r)
				}
				if !noticeHas(events, "budget of 60000 tokens") {
					t.Error("no notice says the budget stopped the turn")
				}
				continuesWithLargerBudget(t, r, "alpha", "budget of 60000 tokens")
			})
			t.Run("an answer that reaches the token budget is stored and its calls answered unrun", func(t *testing.T) {
				r := budgetRig(t, wire)
				r.agent.MaxTurnTokens = 30000
				r.srv.Push(budgetCall())
				tr, _ := r.turn("read a.txt")
				if tr.Reason != BudgetReached || tr.Usage.Input+tr.Usage.CacheRead != 40000 {
					t.Fatalf("turn %+v, want reason %q with the answer's usage counted", tr, BudgetReached)
				}
				msgs := r.stored()
				answer, results := msgs[len(msgs)-2], msgs[len(msgs)-1]
				if len(answer.ToolCalls()) != 1 || answer.Usage == nil {
					t.Fatalf("the answer that crossed the budget is not stored with its call and usage: %+v", answer)
				}
				if len(results.Parts) != 1 || !results.Parts[0].IsError || !strings.Contains(results.Parts[0].Text, "budget") || strings.Contains(results.Parts[0].Text, "alpha") {
					t.Fatalf("the call's result is %+v, want an error saying the budget left it unrun", results.Parts)
				}
				continuesWithLargerBudget(t, r, "were not run")
			})
			t.Run("the turn's cost budget stops the request that would cross it", func(t *testing.T) {
				r := budgetRig(t, wire)
				r.agent.Pricer, r.agent.MaxCost = fakePricer{}, 0.06
				r.srv.Push(budgetCall())
				tr, _ := r.turn("read a.txt")
				if tr.Reason != BudgetReached || len(r.srv.Requests()) != 1 {
					t.Fatalf("turn %+v after %d requests, want reason %q after 1", tr, len(r.srv.Requests()), BudgetReached)
				}
				msgs := r.stored()
				if text := textOf(msgs[len(msgs)-1]); !strings.Contains(text, "the turn has cost $0.040") || !strings.Contains(text, "budget of $0.0600") {
					t.Fatalf("the stored stop says %q, want the turn's cost and its budget", text)
				}
				continuesWithLargerBudget(t, r, "alpha")
			})
			t.Run("the conversation's cost budget counts the turns before", func(t *testing.T) {
				r := budgetRig(t, wire)
				r.agent.Pricer = fakePricer{}
				r.srv.Push(budgetCall(), providertest.Step{Text: "read", Input: 40000, Output: 10})
				r.turn("read a.txt") // $0.0801, no budget
				r.agent.MaxConversationCost = 0.081
				tr, _ := r.turn("and again")
				if tr.Reason != BudgetReached || len(r.srv.Requests()) != 2 {
					t.Fatalf("turn %+v after %d requests, want reason %q with no request sent", tr, len(r.srv.Requests()), BudgetReached)
				}
				msgs := r.stored()
				if text := textOf(msgs[len(msgs)-1]); !strings.Contains(text, "the conversation has cost $0.0801") {
					t.Fatalf("the stored stop says %q, want the conversation's cost", text)
				}
				continuesWithLargerBudget(t, r, "and again")
			})
		})
	}
}

// A cost budget the agent cannot price fails the turn before its prompt
// is stored, saying why.
func TestACostBudgetWithoutAPriceDoesNotStart(t *testing.T) {
	for _, c := range []struct {
		name   string
		pricer Pricer
		model  string
		want   string
	}{
		{"no pricer", nil, "claude-test", "no Pricer"},
		{"a model with no price", fakePricer{}, "no-such-model", "the model no-such-model has no price"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.agent.Pricer, r.agent.Model, r.agent.MaxCost = c.pricer, c.model, 1
			_, err := r.agent.Turn(context.Background(), r.id, "hello", nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want one saying %q", err, c.want)
			}
			if msgs := r.stored(); len(msgs) != 0 || len(r.srv.Requests()) != 0 {
				t.Fatalf("%d messages stored, %d requests sent; want none", len(msgs), len(r.srv.Requests()))
			}
		})
	}
}

// The conversation's cost prices each answer under the model its stored
// settings name, summaries and refusals included, and fails on one with
// no price.
func TestConversationCostPricesEachAnswerUnderItsModel(t *testing.T) {
	u := &history.Usage{Input: 1000000}
	msgs := []history.Message{
		{Role: history.User},
		{Role: history.Assistant, Usage: u, Settings: &history.Settings{Model: "claude-test"}},
		{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Usage: u}}},
		{Role: history.Context, Edit: &history.Edit{Refusal: &history.Refusal{Usage: u}}},
	}
	got, _, err := conversationCost(fakePricer{}, "other", msgs)
	if err != nil || got != 3 {
		t.Fatalf("cost %v, %v; want $3 (three answers of a million input tokens at $1)", got, err)
	}
	msgs = append(msgs, history.Message{Role: history.Assistant, Usage: u, Settings: &history.Settings{Model: "unpriced"}})
	if _, _, err := conversationCost(fakePricer{}, "claude-test", msgs); err == nil || !strings.Contains(err.Error(), "unpriced") {
		t.Fatalf("err %v, want one naming the model with no price", err)
	}
}

// A request's cost estimate reads from the cache what the last request
// had in it, and prices the rest at the dearer of input and a cache
// write.
func TestTheCostEstimateReadsTheCachedPrefix(t *testing.T) {
	b := budget{pricer: fakePricer{}, model: "claude-test", last: history.Usage{Input: 10, CacheRead: 600000, CacheWrite: 400000}, warm: true}
	got := b.estimatedCost(1200000).Dollars
	want := 1000000*0.1/1e6 + 200000*1.25/1e6
	if got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("estimate $%v, want $%v", got, want)
	}
	if why := b.beforeRequest(history.Usage{}, window.Count{Tokens: 1200000}); why != "" {
		t.Fatalf("no budget set, yet %q", why)
	}
}

// hourlessPricer is fakePricer with no price for one-hour cache writes
// (a prices file without cache_write_1h), and a long-prompt tier: a
// request whose prompt is over 50000 tokens is priced wholly at twice
// the price.
type hourlessPricer struct{}

func (hourlessPricer) Cost(model string, u history.Usage) price.Cost {
	if u.CacheWrite1h > 0 {
		return price.Cost{Why: "model " + model + ": no price for one-hour cache writes in the price table"}
	}
	c := fakePricer{}.Cost(model, u)
	if c.Known && u.Input+u.CacheRead+u.CacheWrite > 50000 {
		c.Dollars *= 2
	}
	return c
}

// A request whose cost is unknown under a cost budget ends the turn as
// over budget, saying what could not be priced: it is never counted as
// $0, which would let the budget never trip.
func TestAnUnknownCostEndsTheTurnUnderACostBudget(t *testing.T) {
	r := budgetRig(t, "anthropic")
	r.agent.Pricer, r.agent.MaxCost = hourlessPricer{}, 1
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}, Input: 10, CacheWrite: 40000, CacheWrite1h: 40000, Output: 10},
		providertest.Step{Text: "done"})
	tr, events := r.turn("read a.txt")
	if tr.Reason != BudgetReached || len(r.srv.Requests()) != 1 {
		t.Fatalf("turn %+v after %d requests, want reason %q after the answer that could not be priced", tr, len(r.srv.Requests()), BudgetReached)
	}
	msgs := r.stored()
	results := msgs[len(msgs)-1]
	if len(results.Parts) != 1 || !results.Parts[0].IsError || !strings.Contains(results.Parts[0].Text, "no price for one-hour cache writes") {
		t.Fatalf("the call's result is %+v, want an error saying what could not be priced", results.Parts)
	}
	if !noticeHas(events, "could not be priced") {
		t.Error("no notice says the turn's cost could not be priced")
	}
}

// A cost budget on a wire that writes the one-hour cache does not start
// when the model has no one-hour price: every request would be unknown.
func TestACostBudgetWithTheOneHourCacheNeedsItsPrice(t *testing.T) {
	r := newRig(t)
	r.provider = func(url string) (provider.Provider, error) {
		return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, CacheTTL: anthropic.CacheTTL1h})
	}
	r.agent = r.newAgent()
	r.agent.Pricer, r.agent.MaxCost = hourlessPricer{}, 1
	_, err := r.agent.Turn(context.Background(), r.id, "hello", nil)
	if err == nil || !strings.Contains(err.Error(), "one-hour") || !strings.Contains(err.Error(), "cache_write_1h") {
		t.Fatalf("err %v, want one saying the model has no one-hour cache write price", err)
	}
	if len(r.srv.Requests()) != 0 {
		t.Fatalf("%d requests sent, want none", len(r.srv.Requests()))
	}
	r.agent.Pricer = fakePricer{}
	r.srv.Push(providertest.Step{Text: "hi"})
	if tr, err := r.agent.Turn(context.Background(), r.id, "hello", nil); err != nil || tr.Reason != "end_turn" {
		t.Fatalf("with a one-hour price: turn %+v, %v; want it to run", tr, err)
	}
}

// The turn's cost is the sum of each request's own cost: a long-prompt
// tier applies to a request over its line, not to the turn's summed
// usage (two requests of 40000 tokens are not one of 80000).
func TestTheTurnCostSumsEachRequestPricedOnItsOwn(t *testing.T) {
	r := budgetRig(t, "anthropic")
	r.agent.Pricer, r.agent.MaxCost = hourlessPricer{}, 0.2
	r.srv.Push(budgetCall(), providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_2", "a.txt")}, Input: 40000, Output: 10},
		providertest.Step{Text: "done"})
	tr, _ := r.turn("read a.txt")
	if tr.Reason != "end_turn" || len(r.srv.Requests()) != 3 {
		msgs := r.stored()
		t.Fatalf("turn %+v after %d requests (last stored %q), want end_turn after 3: the two answers cost $0.0801 each priced on its own, not $0.16 at the long tier", tr, len(r.srv.Requests()), textOf(msgs[len(msgs)-1]))
	}
	// the stop states that sum
	r.agent.MaxCost = 0.1
	r.srv.Push(budgetCall(), providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_2", "a.txt")}, Input: 40000, Output: 10})
	r.turn("again")
	msgs := r.stored()
	if text := textOf(msgs[len(msgs)-1]); !strings.Contains(text, "the turn has cost $0.0801") {
		t.Fatalf("the stored stop says %q, want the sum of the requests' own costs ($0.0801)", text)
	}
}

// hourPricer is fakePricer with one-hour cache writes at $2 per million.
type hourPricer struct{}

func (hourPricer) Cost(model string, u history.Usage) price.Cost {
	c := fakePricer{}.Cost(model, u)
	c.Dollars += float64(u.CacheWrite1h) * (2 - 1.25) / 1e6
	return c
}

// samePrice reports whether a and b are the same price to a billionth of a
// dollar.
func samePrice(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// The estimate prices the new input at the one-hour write price when the
// wire writes the one-hour cache.
func TestTheCostEstimateWritesAtTheCacheLifetimesPrice(t *testing.T) {
	b := budget{pricer: hourPricer{}, model: "claude-test", ttl: "1h"}
	if got, want := b.estimatedCost(100000).Dollars, 100000*2/1e6; !samePrice(got, want) {
		t.Fatalf("estimate $%v with the one-hour lifetime, want $%v (every token written at $2 per million)", got, want)
	}
	b.ttl = ""
	if got, want := b.estimatedCost(100000).Dollars, 100000*1.25/1e6; !samePrice(got, want) {
		t.Fatalf("estimate $%v with the five-minute lifetime, want $%v", got, want)
	}
}

// The estimate is priced as one request, so that a request over the
// model's long-prompt line is priced at the long tier, its cached part
// with its new part.
func TestTheCostEstimateIsOneRequestUnderTheLongTier(t *testing.T) {
	b := budget{pricer: hourlessPricer{}, model: "claude-test", last: history.Usage{CacheRead: 30000}, warm: true}
	got, want := b.estimatedCost(60000).Dollars, 2*(30000*0.1+30000*1.25)/1e6
	if !samePrice(got, want) {
		t.Fatalf("estimate $%v of a request of 60000 tokens (30000 cached), want $%v at the long tier (over 50000)", got, want)
	}
}

// The estimate reads the last request's cached part from the cache only
// while it is warm: the last answer stored within the cache's lifetime,
// with no context record after it; else the whole input is a write.
func TestTheCostEstimateReadsTheCacheOnlyWhileWarm(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	answer := func(age time.Duration) history.Message {
		return history.Message{Role: history.Assistant, Usage: &history.Usage{CacheRead: 30000, CacheWrite: 10000}, Time: now.Add(-age)}
	}
	record := history.Message{Role: history.Context, Edit: &history.Edit{}}
	for _, c := range []struct {
		name string
		msgs []history.Message
		ttl  string
		warm bool
	}{
		{"an answer a minute old", []history.Message{answer(time.Minute)}, "", true},
		{"an answer ten minutes old, five-minute cache", []history.Message{answer(10 * time.Minute)}, "", false},
		{"an answer ten minutes old, one-hour cache", []history.Message{answer(10 * time.Minute)}, "1h", true},
		{"an answer two hours old, one-hour cache", []history.Message{answer(2 * time.Hour)}, "1h", false},
		{"a context record after the answer", []history.Message{answer(time.Minute), record}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := budget{pricer: fakePricer{}, model: "claude-test", ttl: c.ttl}
			b.last, b.warm = lastCached(c.msgs, c.ttl, now)
			got := b.estimate(50000)
			read := 0
			if c.warm {
				read = 40000
			}
			if got.CacheRead != read || got.CacheWrite != 50000-read {
				t.Fatalf("estimate %+v, want %d read from the cache and the rest written (warm %v)", got, read, c.warm)
			}
		})
	}
}

// A request of a cost-budgeted turn whose usage could not be priced is
// counted as unknown, never as $0: the next check stops the turn saying
// why (a summary request's usage, counted by fit, goes the same way).
func TestAnUnpricedSummaryStopsTheNextRequest(t *testing.T) {
	b := budget{cost: 1, pricer: hourlessPricer{}, model: "claude-test", spent: price.Cost{Known: true}}
	why := b.beforeRequest(history.Usage{CacheWrite: 1000, CacheWrite1h: 1000}, window.Count{Tokens: 10})
	if !strings.Contains(why, "could not be priced") || !strings.Contains(why, "no price for one-hour cache writes") {
		t.Fatalf("beforeRequest said %q, want the turn stopped saying what could not be priced", why)
	}
}

// The agent's budgets price a stored conversation as the API and history
// show do (price.ConversationAt): an answer stored before the first
// Settings at that Settings' model, not at the agent's.
func TestConversationCostIsPriceConversationsCost(t *testing.T) {
	u := &history.Usage{Input: 1000000}
	msgs := []history.Message{
		{Role: history.User},
		{Role: history.Assistant, Usage: u},
		{Role: history.User},
		{Role: history.Assistant, Usage: u, Settings: &history.Settings{Model: "claude-test"}},
	}
	got, turn, err := conversationCost(fakePricer{}, "unpriced", msgs)
	want := price.Conversation(fakePricer{}, msgs).Cost
	if err != nil || !want.Known || got != want.Dollars || turn != 1 {
		t.Fatalf("the budget prices the conversation at $%v (turn $%v, err %v), price.Conversation at %+v: want the same, $2, the last turn $1", got, turn, err, want)
	}
}

// Issue 31: a summary request the window needs is checked against the
// turn's budgets before it is sent, as every request is: one that would
// cross the budget is not sent, and the turn ends as before any request
// (reason budget, the stop message stored saying why).
func TestASummaryRequestOverTheBudgetIsNotSent(t *testing.T) {
	r := newRig(t)
	r.agent.ContextWindow, r.agent.MaxTokens = 40000, 16000
	ctx := context.Background()
	storeLongTalk(t, r)
	r.srv.Respond = func(q providertest.Request) providertest.Step {
		if strings.Contains(q.LastUserText(), "Write that summary now") {
			return providertest.Step{Text: "the summary"}
		}
		return providertest.Step{Text: "ok"}
	}
	r.agent.MaxTurnTokens = 1000
	tr, err := r.agent.Turn(ctx, r.id, "go on", func(Event) {})
	if err != nil || tr.Reason != BudgetReached {
		t.Fatalf("the turn ended %+v, %v; want reason %q", tr, err, BudgetReached)
	}
	if n := len(r.srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent (the summary request among them); want none, the summary over the budget of 1000 tokens", n)
	}
	msgs, _ := r.agent.Store.Messages(ctx, r.id)
	last := msgs[len(msgs)-1]
	if last.Role != history.Assistant || !strings.HasPrefix(textOf(last), BudgetMarker) || !strings.Contains(textOf(last), "summary") {
		t.Fatalf("the last stored message is %+v; want the budget's stop message saying a summary was needed", last)
	}
}

// storeLongTalk stores on r's conversation 16 prompts of about 8,000
// bytes, each answered "ok": about 32,000 tokens of text.
func storeLongTalk(t *testing.T, r *rig) {
	t.Helper()
	for i := range 16 {
		for _, m := range []history.Message{
			{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: strings.Repeat(fmt.Sprintf("prompt %d ", i), 900)}}},
			{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "ok"}}},
		} {
			if err := r.agent.Store.Append(context.Background(), r.id, m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Issue 31: the resend of a request the provider refused as too long is
// checked against the turn's budgets as every request is: the refusal
// cost nothing, but making room did (a summary of 59,000 input tokens),
// and the resend would cross the budget of 60,000 tokens, so it is not
// sent and the turn ends with reason budget.
func TestTheResendOfARequestRefusedAsTooLongIsCheckedAgainstTheBudget(t *testing.T) {
	r := newRig(t)
	r.agent.ContextWindow, r.agent.MaxTokens = 200000, 4000
	r.srv.Window = 20000 // the provider's window is smaller than myelin was told
	storeLongTalk(t, r)
	summaries := 0
	r.srv.Respond = func(q providertest.Request) providertest.Step {
		if strings.Contains(q.LastUserText(), "Write that summary now") {
			summaries++
			return providertest.Step{Text: "the summary", Input: 59000, Output: 10}
		}
		return providertest.Step{Text: "ok"}
	}
	r.agent.MaxTurnTokens = 60000
	tr, err := r.agent.Turn(context.Background(), r.id, "go on", func(Event) {})
	if err != nil || tr.Reason != BudgetReached {
		t.Fatalf("the turn ended %+v, %v; want reason %q", tr, err, BudgetReached)
	}
	if reqs, refused := len(r.srv.Requests()), r.srv.Refused(); refused != 1 || summaries != 1 || reqs != 2 {
		t.Fatalf("%d requests sent, %d refused, %d summaries; want the refused one and the summary, the resend not sent", reqs, refused, summaries)
	}
}

// A subagent's request charged to the turn that called it (Spending)
// is charged to every turn it runs under, priced on its own at its
// model: what remains shrinks by it, and an unpriced one leaves the cost
// budget unholdable (never $0).
func TestSpendingChargesTheTurnAndTheTurnsItRunsUnder(t *testing.T) {
	fresh := func() *subSpent { return &subSpent{cost: price.Cost{Known: true}} }
	top := &budget{cost: 1, pricer: fakePricer{}, model: "claude-test", spent: price.Cost{Known: true}, sub: fresh()}
	topCtx := withSpending(context.Background(), top)
	mid := &budget{tokens: 100000, sub: fresh()}
	midCtx := withSpending(topCtx, mid)
	SpendingOf(midCtx).Charge("claude-test", history.Usage{Input: 200000}) // $0.20 at fakePricer's prices
	if _, cost, why := SpendingOf(topCtx).Left(); why != "" || !samePrice(cost, 0.8) {
		t.Errorf("the top turn has $%v left (%q); want $0.80 after its subagent's subagent spent $0.20", cost, why)
	}
	if _, _, why := SpendingOf(midCtx).Left(); !strings.Contains(why, "has used 200000 tokens of its budget of 100000") {
		t.Errorf("the middle turn's Left says %q; want its token budget spent", why)
	}
	SpendingOf(midCtx).Charge("unpriced", history.Usage{Input: 1})
	if _, _, why := SpendingOf(topCtx).Left(); !strings.Contains(why, "could not be priced") {
		t.Errorf("after an unpriced request the top turn's Left says %q; want that its cost cannot be told", why)
	}
}
