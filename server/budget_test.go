package server

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/provider/providertest"
)

// onePricer prices claude-test at $1 per million tokens of any kind; other
// models have no price.
type onePricer struct{}

func (onePricer) Cost(model string, u history.Usage) price.Cost {
	if model != "claude-test" {
		return price.Cost{Why: "model " + model + " not in the price table"}
	}
	return price.Cost{Dollars: float64(u.Input+u.Output+u.CacheRead+u.CacheWrite) / 1e6, Known: true}
}

// A turn's budgets (max_turn_tokens, max_cost) end it with reason budget
// on turn.finished, the server's agent unchanged; the next turn, without
// them, goes on.
func TestATurnsBudgetEndsItWithReasonBudget(t *testing.T) {
	for _, body := range []string{`"max_turn_tokens":60000`, `"max_cost":0.06`, `"max_conversation_cost":0.06`} {
		t.Run(body, func(t *testing.T) {
			f := newFixture(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}, Input: 40000, Output: 10})
			f.srv.Agent.Pricer, f.srv.Agent.ContextWindow = onePricer{}, 1<<20
			id := f.newConversation()
			w := f.watch(id)
			if status, out := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"go",`+body+`}`); status != http.StatusAccepted {
				t.Fatalf("%d %s", status, out)
			}
			evs := w.until(t, EventTurnFinished)
			var fin turnFinishedEvent
			mustJSON(t, evs[len(evs)-1].Data, &fin)
			if fin.Reason != agent.BudgetReached || len(f.fake.Requests()) != 1 {
				t.Fatalf("turn.finished %+v after %d requests; want reason %q after 1", fin, len(f.fake.Requests()), agent.BudgetReached)
			}
			if a := f.srv.Agent; a.MaxTurnTokens != 0 || a.MaxCost != 0 || a.MaxConversationCost != 0 {
				t.Fatalf("the server's agent took the turn's budget: %d, %v, %v", a.MaxTurnTokens, a.MaxCost, a.MaxConversationCost)
			}
			f.fake.Push(providertest.Step{Text: "done"})
			if status, out := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"go on"}`); status != http.StatusAccepted {
				t.Fatalf("the next turn: %d %s", status, out)
			}
			evs = w.until(t, EventTurnFinished)
			mustJSON(t, evs[len(evs)-1].Data, &fin)
			if fin.Reason != "end_turn" || fin.Text != "done" {
				t.Fatalf("the next turn finished %+v, want end_turn", fin)
			}
		})
	}
}

// A budget that cannot be held is a 400 saying why, before the turn
// starts.
func TestABudgetThatCannotBeHeldIsRefused(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	for _, c := range []struct {
		pricer     agent.Pricer
		body, want string
	}{
		{onePricer{}, `{"prompt":"x","max_turn_tokens":-1}`, "give a positive budget"},
		{onePricer{}, `{"prompt":"x","max_cost":-0.5}`, "give a positive budget"},
		{onePricer{}, `{"prompt":"x","max_cost":"a lot"}`, "max_cost"},
		{nil, `{"prompt":"x","max_cost":0.5}`, "no Pricer to price its requests"},
		{onePricer{}, `{"prompt":"x","max_conversation_cost":0.5,"model":"unpriced"}`, "the model unpriced has no price"},
	} {
		f.srv.Agent.Pricer = c.pricer
		status, body := f.do("POST", "/v1/conversations/"+id+"/turns", c.body)
		if status != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s; want 400 saying %q", c.body, status, body, c.want)
		}
	}
	if n := len(f.fake.Requests()); n != 0 {
		t.Fatalf("%d requests sent for refused turns", n)
	}
}

// A queued turn's job carries every setting of its body, the budgets
// included, so a worker runs it as the body said: a field added to
// TurnInput and not to QueuedTurn fails this test.
func TestAQueuedTurnCarriesEverySettingOfItsBody(t *testing.T) {
	in := TurnInput{Model: "m", MaxRounds: 2, MaxTokens: 3, MaxTurnTokens: 4, MaxCost: 0.5, MaxConversationCost: 6}
	v := reflect.ValueOf(in)
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "Prompt" && v.Field(i).IsZero() {
			t.Fatalf("the test's body leaves %s unset: set it", name)
		}
	}
	b, err := json.Marshal(queuedTurn("t1", in))
	if err != nil {
		t.Fatal(err)
	}
	var job QueuedTurn
	if err := json.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	if got := job.input(); got != in {
		t.Fatalf("the job runs %+v, the body said %+v", got, in)
	}
}

// Issue 31: a turn's budgets are a ceiling under the server's own
// (serve --max-turn-tokens, --max-cost, --max-conversation-cost): one at
// or under it is taken, one above it is a 400 saying what the server
// allows, and the server's holds for a turn that gives none.
func TestATurnsBudgetMayLowerTheServersButNotRaiseIt(t *testing.T) {
	f := newFixture(t)
	f.srv.Agent.Pricer, f.srv.Agent.ContextWindow = onePricer{}, 1<<20
	f.srv.Agent.MaxTurnTokens, f.srv.Agent.MaxCost, f.srv.Agent.MaxConversationCost = 1000, 0.5, 2
	for _, c := range []struct{ body, want string }{
		{`{"prompt":"x","max_turn_tokens":1001}`, "max_turn_tokens 1001 is above the server's budget of 1000 tokens"},
		{`{"prompt":"x","max_cost":0.75}`, "max_cost 0.75 is above the server's budget of $0.5 (serve --max-cost): give at most 0.5"},
		{`{"prompt":"x","max_conversation_cost":3}`, "max_conversation_cost 3 is above the server's budget of $2 (serve --max-conversation-cost)"},
	} {
		status, body := f.do("POST", "/v1/conversations/"+f.newConversation()+"/turns", c.body)
		if status != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s; want 400 saying %q", c.body, status, body, c.want)
		}
	}
	for _, c := range []struct {
		in                 TurnInput
		tokens             int
		cost, conversation float64
	}{
		{TurnInput{MaxTurnTokens: 10, MaxCost: 0.25, MaxConversationCost: 1}, 10, 0.25, 1},
		{TurnInput{MaxTurnTokens: 1000, MaxCost: 0.5, MaxConversationCost: 2}, 1000, 0.5, 2},
		{TurnInput{Model: "claude-test"}, 1000, 0.5, 2},
	} {
		a, err := f.srv.agentFor(c.in, false)
		if err != nil || a.MaxTurnTokens != c.tokens || a.MaxCost != c.cost || a.MaxConversationCost != c.conversation {
			t.Errorf("%+v runs with budgets %d, %v, %v (%v); want %d, %v, %v", c.in, a.MaxTurnTokens, a.MaxCost, a.MaxConversationCost, err, c.tokens, c.cost, c.conversation)
		}
	}
	if n := len(f.fake.Requests()); n != 0 {
		t.Fatalf("%d requests sent for refused turns", n)
	}
}

// A queued turn's worker holds the turn's budgets under its own: one
// above the worker's (which the server that queued it allowed) is
// lowered to the worker's, so the turn ends at the worker's bound.
func TestAQueuedTurnsBudgetIsLoweredToItsWorkersOwn(t *testing.T) {
	f := newFixture(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}, Input: 40000, Output: 10})
	f.srv.Agent.ContextWindow = 1 << 20
	f.srv.Queue = &memQueue{store: f.store, pending: map[string]QueuedTurn{}, jobs: make(chan QueuedTurn, 4)}
	id := f.newConversation()
	w := f.watch(id)
	ts := f.startTurn(id, "go")
	f.srv.Agent.MaxTurnTokens = 30000 // the worker's own, under the turn's
	if err := f.srv.RunQueued(context.Background(), id, QueuedTurn{Turn: ts.Turn, MaxTurnTokens: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	evs := w.until(t, EventTurnFinished)
	var fin turnFinishedEvent
	mustJSON(t, evs[len(evs)-1].Data, &fin)
	if fin.Reason != agent.BudgetReached || len(f.fake.Requests()) != 1 {
		t.Fatalf("turn.finished %+v after %d requests; want reason %q after 1, at the worker's 30,000 tokens", fin, len(f.fake.Requests()), agent.BudgetReached)
	}
}

// A worker re-checks a queued turn's cost budget with its own price
// table: one it cannot hold (the worker has no price for the model) ends
// the turn there, the conversation valid and turn.finished saying why,
// and the job is not tried again (RunQueued returns nil).
func TestAQueuedTurnsCostBudgetTheWorkerCannotPriceEndsTheTurn(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "not sent"})
	f.srv.Agent.Pricer = onePricer{}
	f.srv.Queue = &memQueue{store: f.store, pending: map[string]QueuedTurn{}, jobs: make(chan QueuedTurn, 4)}
	id := f.newConversation()
	w := f.watch(id)
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"go","max_cost":0.5}`)
	if status != http.StatusAccepted {
		t.Fatalf("start turn: %d %s", status, body)
	}
	var ts TurnStarted
	mustJSON(t, body, &ts)
	f.srv.Agent.Pricer = nil // the worker's: no price table
	if err := f.srv.RunQueued(context.Background(), id, QueuedTurn{Turn: ts.Turn, MaxCost: 0.5}); err != nil {
		t.Fatalf("RunQueued: %v; want nil, the turn ended, not tried again", err)
	}
	evs := w.until(t, EventTurnFinished)
	var fin turnFinishedEvent
	mustJSON(t, evs[len(evs)-1].Data, &fin)
	if fin.Reason != "error" || !strings.Contains(fin.Error, "cannot hold its budgets") || !strings.Contains(fin.Error, "no Pricer") || len(f.fake.Requests()) != 0 {
		t.Fatalf("turn.finished %+v after %d requests; want reason error saying the worker cannot hold the budget, none sent", fin, len(f.fake.Requests()))
	}
	msgs, _ := f.store.Messages(context.Background(), id)
	if len(msgs) != 2 || msgs[1].Role != history.Assistant {
		t.Fatalf("stored %d messages, want the prompt and its cut answer (the conversation valid)", len(msgs))
	}
}
