package server

import (
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
