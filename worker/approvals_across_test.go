package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/server"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// askingAPIOn is apiOn whose agent also has the tool ask--run, which puts
// its own call to its server for approval (server.Server.Ask, as the
// permission gate does) and returns the answer.
func askingAPIOn(t *testing.T, store *postgres.Store, providerURL string, workers int) *httptest.Server {
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
	api := &server.Server{Workspace: ws}
	reg := &tool.Registry{}
	if err := reg.Add(tool.MustFunc("ask--run", "Asks for its own approval.", func(ctx context.Context, in struct {
		Rule string `json:"rule,omitempty"`
	}) (any, error) {
		ans, err := api.Ask(ctx, approval.Request{Tool: "shell--run", Command: "rm -rf /tmp/x", Rule: in.Rule, Reason: "asked by default"})
		return fmt.Sprintf("%s by=%s err=%v", ans.Choice, ans.By, err), nil
	})); err != nil {
		t.Fatal(err)
	}
	api.Agent = &agent.Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: "claude-test"}
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

// sseEvent is one event of a stream: its type and data.
type sseEvent struct {
	typ  string
	data json.RawMessage
}

// readUntil reads an event stream up to an event of type typ and returns
// the events read; a stream that ends first fails the test.
func readUntil(t *testing.T, r *bufio.Reader, typ string) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var cur sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended (%v) before %s, after %d events", err, typ, len(evs))
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = json.RawMessage(line[6:])
		case line == "" && cur.typ != "":
			evs = append(evs, cur)
			if cur.typ == typ {
				return evs
			}
			cur = sseEvent{}
		}
	}
}

// With serve --worker on Postgres, a call waiting for approval on the
// process whose worker runs its turn is listed by, and answered through,
// another process that runs no turns: the answer goes through the shared
// event log, the call gets it, the turn goes on; a second answer, to
// either process, is a 409.
func TestAnApprovalWaitingOnOneWorkerIsAnsweredThroughAnotherProcess(t *testing.T) {
	_, reopen := open(t)
	fake := providertest.NewAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "ask--run", Input: `{"rule":"rm -rf /tmp/*"}`}}},
		providertest.Step{Text: "cleaned"},
	)
	front := askingAPIOn(t, reopen(), fake.URL, 0)
	back := askingAPIOn(t, reopen(), fake.URL, 1)
	do := func(method, url, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := do("POST", front.URL+"/v1/conversations", "")
	var conv struct{ ID string }
	if err := json.Unmarshal([]byte(body), &conv); status != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %s", status, body)
	}
	base := "/v1/conversations/" + conv.ID
	watch, err := http.Get(front.URL + base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	events := bufio.NewReader(watch.Body)
	if status, body := do("POST", front.URL+base+"/turns", `{"prompt":"clean up"}`); status != http.StatusAccepted {
		t.Fatalf("start: %d %s", status, body)
	}
	evs := readUntil(t, events, server.EventApproval)
	var asked struct {
		ID, Rule string
		CallID   string `json:"call_id"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].data, &asked); err != nil || asked.CallID != "c1" || asked.Rule != "rm -rf /tmp/*" {
		t.Fatalf("the approval event %s (%v)", evs[len(evs)-1].data, err)
	}
	// the process that runs no turns lists it, from the shared events
	if status, body := do("GET", front.URL+base+"/approvals", ""); status != 200 || !strings.Contains(body, asked.ID) {
		t.Fatalf("the front process lists %d %s, want %s", status, body, asked.ID)
	}
	if status, body := do("POST", front.URL+base+"/approvals/"+asked.ID, `{"decision":"maybe"}`); status != http.StatusBadRequest {
		t.Fatalf("a bad decision through the front process: %d %s", status, body)
	}
	if status, body := do("POST", front.URL+base+"/approvals/"+asked.ID, `{"decision":"allow_session"}`); status != 200 || !strings.Contains(body, `"rule":"rm -rf /tmp/*"`) {
		t.Fatalf("the decision through the front process: %d %s", status, body)
	}
	evs = readUntil(t, events, server.EventTurnFinished)
	var got string
	for _, e := range evs {
		if e.typ == server.EventToolFinished {
			var fin struct{ Text string }
			json.Unmarshal(e.data, &fin)
			got = fin.Text
		}
	}
	if got != "allow_session by=api err=<nil>" {
		t.Fatalf("the call waiting on the back process got %q; events %v", got, evs)
	}
	for _, hs := range []*httptest.Server{front, back} {
		if status, body := do("POST", hs.URL+base+"/approvals/"+asked.ID, `{"decision":"deny"}`); status != http.StatusConflict {
			t.Errorf("a second decision to %s: %d %s", hs.URL, status, body)
		}
	}
}
