package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
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

// gatedAPIOn is apiOn whose agent runs its calls under a permission gate
// that asks through its server (approval.Gate's Asker: server.Server),
// with the tool clean--run (which the default policy asks about); ran
// counts its runs. stop stops the process early (its queue, its API).
func gatedAPIOn(t *testing.T, store *postgres.Store, providerURL string, workers int, ran *atomic.Int32) (hs *httptest.Server, stop func()) {
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
	if err := reg.Add(tool.MustFunc("clean--run", "Cleans.", func(context.Context, struct{}) (any, error) { ran.Add(1); return "cleaned", nil })); err != nil {
		t.Fatal(err)
	}
	// a turn left waiting (the test failed) ends within the test's time
	api := &server.Server{Workspace: ws, ApprovalTimeout: 30 * time.Second}
	api.Agent = &agent.Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: "claude-test",
		Gate: &approval.Gate{Asker: api}}
	events := NewEvents(store.Pool(), EventsOptions{})
	q, err := New(store, store.Pool(), api.RunQueued, Options{Workers: workers, Poll: 50 * time.Millisecond, End: api.EndQueued})
	if err != nil {
		t.Fatal(err)
	}
	api.Events, api.Queue = events, q
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs = httptest.NewServer(api)
	stop = sync.OnceFunc(func() {
		q.Stop(context.Background())
		api.Close()
		hs.Close()
		events.Close()
	})
	t.Cleanup(stop)
	return hs, stop
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
// either process, is a 409. The allow_session answered holds for the
// conversation on a worker process that never saw it: the next turn,
// run there, is not asked.
func TestAnApprovalWaitingOnOneWorkerIsAnsweredThroughAnotherProcess(t *testing.T) {
	_, reopen := open(t)
	fake := providertest.NewAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "clean--run", Input: `{}`}}},
		providertest.Step{Text: "cleaned"},
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c2", Name: "clean--run", Input: `{}`}}},
		providertest.Step{Text: "cleaned again"},
	)
	var ran atomic.Int32
	front, _ := gatedAPIOn(t, reopen(), fake.URL, 0, &ran)
	back, stopBack := gatedAPIOn(t, reopen(), fake.URL, 1, &ran)
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
	if err := json.Unmarshal(evs[len(evs)-1].data, &asked); err != nil || asked.CallID != "c1" || asked.Rule != "clean--run" {
		t.Fatalf("the approval event %s (%v)", evs[len(evs)-1].data, err)
	}
	// the process that runs no turns lists it, from the shared events
	if status, body := do("GET", front.URL+base+"/approvals", ""); status != 200 || !strings.Contains(body, asked.ID) {
		t.Fatalf("the front process lists %d %s, want %s", status, body, asked.ID)
	}
	if status, body := do("POST", front.URL+base+"/approvals/"+asked.ID, `{"decision":"maybe"}`); status != http.StatusBadRequest {
		t.Fatalf("a bad decision through the front process: %d %s", status, body)
	}
	if status, body := do("POST", front.URL+base+"/approvals/"+asked.ID, `{"decision":"allow_session"}`); status != 200 || !strings.Contains(body, `"rule":"clean--run"`) {
		t.Fatalf("the decision through the front process: %d %s", status, body)
	}
	readUntil(t, events, server.EventTurnFinished)
	if ran.Load() != 1 {
		t.Fatalf("the allowed call ran %d time(s)", ran.Load())
	}
	for _, hs := range []*httptest.Server{front, back} {
		if status, body := do("POST", hs.URL+base+"/approvals/"+asked.ID, `{"decision":"deny"}`); status != http.StatusConflict {
			t.Errorf("a second decision to %s: %d %s", hs.URL, status, body)
		}
	}

	// the worker that was answered stops; another, whose gate never saw
	// the answer, runs the next turn: not asked again
	stopBack()
	gatedAPIOn(t, reopen(), fake.URL, 1, &ran)
	if status, body := do("POST", front.URL+base+"/turns", `{"prompt":"again"}`); status != http.StatusAccepted {
		t.Fatalf("start the second turn: %d %s", status, body)
	}
	for _, e := range readUntil(t, events, server.EventTurnFinished) {
		if e.typ == server.EventApproval {
			t.Fatalf("the second worker asked again for a call allowed for the conversation: %s", e.data)
		}
	}
	if ran.Load() != 2 {
		t.Fatalf("the call allowed for the conversation ran %d time(s) in all, want 2", ran.Load())
	}
	// its record says the conversation's earlier answer allowed it, not a
	// person now
	status, body = do("GET", front.URL+base+"/messages", "")
	var page struct {
		Messages []struct {
			Message struct {
				Parts []struct {
					Type       string `json:"type"`
					Permission *struct {
						By string `json:"by"`
					} `json:"permission"`
				} `json:"parts"`
			} `json:"message"`
		} `json:"messages"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("the messages: %d %s", status, body)
	}
	var bys []string
	for _, m := range page.Messages {
		for _, p := range m.Message.Parts {
			if p.Permission != nil {
				bys = append(bys, p.Permission.By)
			}
		}
	}
	if len(bys) != 2 || bys[0] != "person" || bys[1] != "session" {
		t.Errorf("the two calls' records were decided by %q, want [person session]", bys)
	}
}
