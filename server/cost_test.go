package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// finishedTurn runs one turn of body through f's fake provider and
// returns its turn.finished data as JSON, raw and decoded.
func finishedTurn(t *testing.T, f *fixture, id, body string) (map[string]any, turnFinishedEvent) {
	t.Helper()
	w := f.watch(id)
	if status, out := f.do("POST", "/v1/conversations/"+id+"/turns", body); status != http.StatusAccepted {
		t.Fatalf("POST turns %s: %d %s", body, status, out)
	}
	evs := w.until(t, EventTurnFinished)
	data := evs[len(evs)-1].Data
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	var fin turnFinishedEvent
	mustJSON(t, data, &fin)
	return raw, fin
}

// Issue 31: turn.finished says what the turn cost, the sum of its
// requests' costs, each priced on its own under the turn's model.
func TestTurnFinishedCarriesTheSumOfItsRequestsCosts(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}, Input: 40000, Output: 10},
		providertest.Step{Text: "done", Input: 40100, Output: 20})
	f.srv.Agent.Pricer, f.srv.Agent.ContextWindow = onePricer{}, 1<<20
	id := f.newConversation()
	_, fin := finishedTurn(t, f, id, `{"prompt":"go"}`)
	want := float64(40000+10+40100+20) / 1e6 // onePricer: $1 per million tokens
	if fin.Cost == nil || !fin.Cost.Known || fin.Cost.USD == nil || math.Abs(*fin.Cost.USD-want) > 1e-12 {
		t.Fatalf("turn.finished cost %+v after %d requests, want known usd %v", fin.Cost, len(f.fake.Requests()), want)
	}
}

// A turn whose model has no price — the server's, or the one the turn
// names — costs "unknown" with why, and its turn.finished has no usd at
// all: an unknown cost is never 0.
func TestTurnFinishedCostOfAnUnpricedModelIsUnknownNotZero(t *testing.T) {
	for _, turnsModel := range []bool{false, true} {
		t.Run(fmt.Sprintf("named by the turn %v", turnsModel), func(t *testing.T) {
			testUnpricedTurnCost(t, turnsModel)
		})
	}
}

func testUnpricedTurnCost(t *testing.T, turnsModel bool) {
	f := newFixture(t, providertest.Step{Text: "done", Input: 100, Output: 5})
	f.srv.Agent.Pricer = onePricer{}
	body := `{"prompt":"go","model":"unpriced"}`
	if !turnsModel {
		f.srv.Agent.Model, body = "unpriced", `{"prompt":"go"}`
	}
	id := f.newConversation()
	raw, fin := finishedTurn(t, f, id, body)
	cost, _ := raw["cost"].(map[string]any)
	if cost == nil || cost["known"] != false {
		t.Fatalf("turn.finished cost %v, want known false", raw["cost"])
	}
	if _, has := cost["usd"]; has {
		t.Errorf("an unknown cost has usd %v: it must have none", cost["usd"])
	}
	if fin.Cost.Why == "" {
		t.Errorf("an unknown cost %+v says not why", fin.Cost)
	}
}

// A server without a price table says nothing of cost, rather than $0.
func TestTurnFinishedHasNoCostWithoutAPricer(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "done", Input: 100, Output: 5})
	id := f.newConversation()
	raw, _ := finishedTurn(t, f, id, `{"prompt":"go"}`)
	if c, has := raw["cost"]; has {
		t.Fatalf("turn.finished has cost %v with no Pricer, want none", c)
	}
}

// Issue 31: each entry of the request list (and GET …/requests/{n}) says
// what it cost: its answer's usage priced under the turn's model; a
// request that produced no answer has no cost, not $0.
func TestTheRequestListGivesEachRequestsCost(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}, Input: 40000, Output: 10},
		providertest.Step{Text: "done", Input: 40100, Output: 20})
	f.srv.Agent.Pricer, f.srv.Agent.ContextWindow = onePricer{}, 1<<20
	id := f.newConversation()
	finishedTurn(t, f, id, `{"prompt":"go"}`)
	if _, err := f.store.AddRequest(context.Background(), id, history.SentRequest{Msg: -1, Wire: "anthropic", Body: []byte(`{}`), Error: "too long"}); err != nil {
		t.Fatal(err)
	}
	status, body := f.do("GET", "/v1/conversations/"+id+"/requests", "")
	var list struct {
		Requests []RequestInfo `json:"requests"`
	}
	mustJSON(t, body, &list)
	if status != http.StatusOK || len(list.Requests) != 3 {
		t.Fatalf("requests: %d %s", status, body)
	}
	for i, want := range []float64{40010.0 / 1e6, 40120.0 / 1e6} {
		c := list.Requests[i].Cost
		if c == nil || !c.Known || c.USD == nil || math.Abs(*c.USD-want) > 1e-12 {
			t.Errorf("request %d's cost is %+v, want known usd %v: %s", i+1, c, want, body)
		}
		_, one := f.do("GET", fmt.Sprintf("/v1/conversations/%s/requests/%d", id, i+1), "")
		var info RequestInfo
		mustJSON(t, one, &info)
		if info.Cost == nil || c == nil || info.Cost.USD == nil || c.USD == nil || *info.Cost.USD != *c.USD {
			t.Errorf("GET …/requests/%d says cost %+v, the list %+v", i+1, info.Cost, c)
		}
	}
	if c := list.Requests[2].Cost; c != nil {
		t.Errorf("the request that produced no answer has cost %+v; it should have none", c)
	}
}

// A request whose model has no price has an unknown cost with why, and
// no usd.
func TestTheRequestListsCostOfAnUnpricedModelIsUnknownNotZero(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "done", Input: 100, Output: 5})
	f.srv.Agent.Pricer = onePricer{}
	f.srv.Agent.Model = "unpriced"
	id := f.newConversation()
	finishedTurn(t, f, id, `{"prompt":"go"}`)
	_, body := f.do("GET", "/v1/conversations/"+id+"/requests", "")
	var list struct {
		Requests []RequestInfo `json:"requests"`
	}
	mustJSON(t, body, &list)
	if len(list.Requests) != 1 {
		t.Fatalf("requests: %s", body)
	}
	if c := list.Requests[0].Cost; c == nil || c.Known || c.USD != nil || c.Why == "" {
		t.Fatalf("the unpriced request's cost is %+v, want known false with why and no usd: %s", c, body)
	}
}

// Issue 31: GET /v1/conversations/{id} says what the whole conversation
// cost, every turn's requests priced on its own and summed; unknown (no
// usd, at_least_usd for the known part) once one could not be priced;
// absent on a server without a price table.
func TestGetConversationGivesTheConversationsTotalCost(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}, Input: 40000, Output: 10},
		providertest.Step{Text: "done", Input: 40100, Output: 20},
		providertest.Step{Text: "again", Input: 40200, Output: 30},
		providertest.Step{Text: "unpriced", Input: 100, Output: 5})
	f.srv.Agent.Pricer, f.srv.Agent.ContextWindow = onePricer{}, 1<<20
	id := f.newConversation()
	cost := func() map[string]any {
		t.Helper()
		status, body := f.do("GET", "/v1/conversations/"+id, "")
		var raw map[string]any
		if err := json.Unmarshal(body, &raw); status != http.StatusOK || err != nil {
			t.Fatalf("GET conversation: %d %s", status, body)
		}
		c, _ := raw["cost"].(map[string]any)
		return c
	}
	if c := cost(); c == nil || c["known"] != true || c["usd"] != 0.0 {
		t.Errorf("a new conversation costs %v, want a known usd 0 (no request yet)", c)
	}
	nextTurn(t, f, id, `{"prompt":"go"}`)
	nextTurn(t, f, id, `{"prompt":"again"}`)
	want := float64(40000+10+40100+20+40200+30) / 1e6 // onePricer: $1 per million tokens
	if c := cost(); c == nil || c["known"] != true || math.Abs(c["usd"].(float64)-want) > 1e-12 {
		t.Errorf("after two turns the conversation costs %v, want known usd %v", c, want)
	}
	_, out := f.do("GET", "/v1/conversations/"+id, "")
	var ci ConversationInfo
	mustJSON(t, out, &ci)
	if len(ci.TurnCosts) != 2 || ci.TurnCosts[0].Prompt != 1 || len(ci.TurnCosts[0].Requests) != 2 || len(ci.TurnCosts[1].Requests) != 1 ||
		ci.TurnCosts[1].Requests[0].Kind != "answer" || ci.TurnCosts[1].Cost.USD == nil || math.Abs(*ci.TurnCosts[1].Cost.USD-40230.0/1e6) > 1e-12 {
		t.Errorf("turn_costs %s: want two turns, from message 1 with 2 requests, then one answer of $0.04023 (40,230 tokens)", out)
	}
	nextTurn(t, f, id, `{"prompt":"more","model":"unpriced"}`)
	c := cost()
	if c == nil || c["known"] != false || c["why"] == "" {
		t.Fatalf("with an unpriced request the conversation costs %v, want known false with why", c)
	}
	if _, has := c["usd"]; has || c["at_least_usd"] == nil || math.Abs(c["at_least_usd"].(float64)-want) > 1e-12 {
		t.Errorf("with an unpriced request the conversation costs %v: want no usd, at_least_usd %v", c, want)
	}
	f.srv.Agent.Pricer = nil
	if c := cost(); c != nil {
		t.Errorf("a server without a price table gives the conversation's cost %v, want none", c)
	}
}

// nextTurn runs one more turn of body on conversation id and waits for
// its turn.finished (watching from the conversation's last event, not a
// turn.finished before it).
func nextTurn(t *testing.T, f *fixture, id, body string) {
	t.Helper()
	_, out := f.do("GET", "/v1/conversations/"+id, "")
	var ci ConversationInfo
	mustJSON(t, out, &ci)
	w := f.watch(id, "Last-Event-ID", fmt.Sprint(ci.LastEvent))
	if status, out := f.do("POST", "/v1/conversations/"+id+"/turns", body); status != http.StatusAccepted {
		t.Fatalf("POST turns %s: %d %s", body, status, out)
	}
	w.until(t, EventTurnFinished)
}
