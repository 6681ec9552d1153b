package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/server"
	"github.com/myelin-run/myelin/tool"
)

// perMillion prices claude-test at its dollars per million tokens of any
// kind, as a process's price table (--prices) would; other models have
// no price.
type perMillion float64

func (p perMillion) Cost(model string, u history.Usage) price.Cost {
	if model != "claude-test" {
		return price.Cost{Why: "model " + model + " not in the price table"}
	}
	return price.Cost{Dollars: float64(u.Input+u.Output+u.CacheRead+u.CacheWrite) * float64(p) / 1e6, Known: true}
}

// pricedAPI is a `serve --worker` process on store running workers turns
// at once (0: none), whose price table is prices.
func pricedAPI(t *testing.T, store *postgres.Store, providerURL string, workers int, prices agent.Pricer) *httptest.Server {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: providerURL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent.Agent{Provider: p, Store: store, Tools: &tool.Registry{}, Model: "claude-test", Pricer: prices, ContextWindow: 1 << 20}
	api := &server.Server{Agent: a}
	events := NewEvents(store.Pool(), EventsOptions{})
	q, err := New(store, store.Pool(), api.RunQueued, Options{Workers: workers, Poll: 50 * time.Millisecond, End: api.EndQueued, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	api.Events, api.Queue = events, q
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(api)
	t.Cleanup(func() {
		q.Stop(context.Background())
		api.Close()
		hs.Close()
		events.Close()
	})
	return hs
}

// Issue 31: the worker that runs a queued turn holds its cost budget
// with its own price table (the worker process's --prices), not the one
// of the process that queued it: a turn the front prices at nothing, the
// worker prices over its budget before its first request, and ends it
// there with reason budget, nothing sent.
func TestAWorkerHoldsAQueuedTurnsCostBudgetWithItsOwnPrices(t *testing.T) {
	_, reopen := open(t)
	fake := providertest.NewAnthropic(t, providertest.Step{Text: "not sent"})
	front := pricedAPI(t, reopen(), fake.URL, 0, perMillion(0))
	pricedAPI(t, reopen(), fake.URL, 1, perMillion(1e6)) // a dollar a token
	resp, err := http.Post(front.URL+"/v1/conversations", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var conv struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&conv)
	resp.Body.Close()
	watch, err := http.Get(front.URL + "/v1/conversations/" + conv.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	resp, err = http.Post(front.URL+"/v1/conversations/"+conv.ID+"/turns", "application/json", strings.NewReader(`{"prompt":"hi","max_cost":0.5}`))
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("starting the turn: %v %v", resp.Status, err)
	}
	resp.Body.Close()
	readUntilFinished(t, watch)
	resp, err = http.Get(front.URL + "/v1/conversations/" + conv.ID + "/events?after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fin := finishedData(t, resp)
	if fin["reason"] != agent.BudgetReached || len(fake.Requests()) != 0 {
		t.Fatalf("turn.finished %v after %d requests; want reason %q before the first, at the worker's prices", fin, len(fake.Requests()), agent.BudgetReached)
	}
}

// finishedData is the data of the first turn.finished of an event
// stream.
func finishedData(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	body := make([]byte, 0, 4096)
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		body = append(body, buf[:n]...)
		s := string(body)
		if i := strings.Index(s, "event: "+server.EventTurnFinished+"\n"); i >= 0 {
			if j := strings.Index(s[i:], "data: "); j >= 0 {
				if k := strings.Index(s[i+j:], "\n"); k >= 0 {
					var data map[string]any
					if err := json.Unmarshal([]byte(s[i+j+len("data: "):i+j+k]), &data); err != nil {
						t.Fatal(err)
					}
					return data
				}
			}
		}
		if err != nil {
			t.Fatalf("the stream ended (%v) before turn.finished: %s", err, s)
		}
	}
}
