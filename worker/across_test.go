package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/server"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// apiOn is a server on store with the workers' events and queue, running
// workers turns at once (0: none), as one `serve --worker` process.
func apiOn(t *testing.T, store *postgres.Store, providerURL string, workers int) *httptest.Server {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: providerURL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := &tool.Registry{}
	if err := reg.Add(ws.Tools()...); err != nil {
		t.Fatal(err)
	}
	a := &agent.Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: "claude-test"}
	api := &server.Server{Agent: a, Workspace: ws}
	events := NewEvents(store.Pool(), EventsOptions{})
	q, err := New(store, store.Pool(), api.RunQueued, Options{Workers: workers, Poll: 50 * time.Millisecond, End: api.EndQueued})
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

// A turn started through one process that runs no turns is run by
// another's worker, and its events reach a watcher of the first; a
// watcher of the second resuming from an id the first gave gets what
// follows, under the same ids.
func TestATurnRunByAnotherProcessStreamsToAWatcherOfAny(t *testing.T) {
	_, reopen := open(t)
	fake := providertest.NewAnthropic(t, providertest.Step{Text: "from the other process"})
	front := apiOn(t, reopen(), fake.URL, 0)
	back := apiOn(t, reopen(), fake.URL, 1)
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
	resp, err = http.Post(front.URL+"/v1/conversations/"+conv.ID+"/turns", "application/json", strings.NewReader(`{"prompt":"hi"}`))
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("starting the turn: %v %v", resp.Status, err)
	}
	resp.Body.Close()
	ids, types := readUntilFinished(t, watch)
	if types[0] != server.EventTurnStarted || !strings.Contains(strings.Join(types, " "), server.EventModelDelta) {
		t.Fatalf("the front's watcher saw %v", types)
	}
	req, _ := http.NewRequest("GET", back.URL+"/v1/conversations/"+conv.ID+"/events", nil)
	req.Header.Set("Last-Event-ID", ids[0])
	resumed, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Body.Close()
	again, _ := readUntilFinished(t, resumed)
	if strings.Join(again, " ") != strings.Join(ids[1:], " ") {
		t.Fatalf("resumed on the other process after %s: ids %v, want %v", ids[0], again, ids[1:])
	}
}

// readUntilFinished reads an event stream up to turn.finished and returns
// the events' ids and types; a stream that ends first fails the test.
func readUntilFinished(t *testing.T, resp *http.Response) (ids, types []string) {
	t.Helper()
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended (%v) after %v", err, types)
		}
		line = strings.TrimSuffix(line, "\n")
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, id)
		}
		if typ, ok := strings.CutPrefix(line, "event: "); ok {
			types = append(types, typ)
			if typ == server.EventTurnFinished {
				return ids, types
			}
		}
	}
}
