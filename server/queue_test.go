package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// memQueue is a TurnQueue in memory: one pending turn per conversation,
// its jobs handed to the test.
type memQueue struct {
	store     history.Store
	mu        sync.Mutex
	pending   map[string]QueuedTurn
	jobs      chan QueuedTurn
	cancelled []string
}

func (q *memQueue) Enqueue(ctx context.Context, conv string, t QueuedTurn, prompt history.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p, ok := q.pending[conv]; ok {
		return &QueuedError{Conversation: conv, Turn: p.Turn}
	}
	if err := q.store.Append(ctx, conv, prompt); err != nil {
		return err
	}
	q.pending[conv] = t
	q.jobs <- t
	return nil
}

func (q *memQueue) Cancel(_ context.Context, conv, tid string) (bool, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending[conv].Turn != tid {
		return false, false, nil
	}
	q.cancelled = append(q.cancelled, tid)
	return true, false, nil
}

func (q *memQueue) Pending(_ context.Context, conv string) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending[conv].Turn, nil
}

func (q *memQueue) done(conv string) {
	q.mu.Lock()
	delete(q.pending, conv)
	q.mu.Unlock()
}

// With a queue, a turn started is stored and queued, not run; a second
// turn meanwhile is a 409 naming the first; the worker's RunQueued runs it
// with its events in the log, and run again (a job delivered twice) it
// sends nothing more and says the turn had ended.
func TestAQueuedTurnIsStoredRefusedTwiceAndRunOnceByItsWorker(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "done"},
	)
	q := &memQueue{store: f.store, pending: map[string]QueuedTurn{}, jobs: make(chan QueuedTurn, 4)}
	f.srv.Queue = q
	id := f.newConversation()
	w := f.watch(id)
	ts := f.startTurn(id, "go")
	if msgs, _ := f.store.Messages(context.Background(), id); len(msgs) != 1 || msgs[0].Parts[0].Text != "go" || len(f.fake.Requests()) != 0 {
		t.Fatalf("queued: %d messages stored, %d requests sent", len(msgs), len(f.fake.Requests()))
	}
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"again"}`)
	if status != http.StatusConflict || !strings.Contains(string(body), ts.Turn) {
		t.Fatalf("a second turn while one is queued: %d %s", status, body)
	}
	status, body = f.do("GET", "/v1/conversations/"+id, "")
	if status != 200 || !strings.Contains(string(body), ts.Turn) {
		t.Fatalf("the conversation does not name its queued turn: %d %s", status, body)
	}
	job := <-q.jobs
	if err := f.srv.RunQueued(context.Background(), id, job); err != nil {
		t.Fatal(err)
	}
	evs := w.until(t, EventTurnFinished)
	if evs[0].Type != EventTurnStarted || !strings.Contains(string(evs[0].Data), `"prompt":"go"`) || !strings.Contains(string(evs[len(evs)-1].Data), `"reason":"end_turn"`) {
		t.Fatalf("events %v: first %s, last %s", types(evs), evs[0].Data, evs[len(evs)-1].Data)
	}
	if err := f.srv.RunQueued(context.Background(), id, job); err != nil {
		t.Fatal(err)
	}
	again := w.until(t, EventTurnFinished)
	if !strings.Contains(string(again[len(again)-1].Data), `"reason":"already_ended"`) || len(f.fake.Requests()) != 2 {
		t.Fatalf("run twice: %s after %d requests", again[len(again)-1].Data, len(f.fake.Requests()))
	}
	q.done(id)
	status, body = f.do("POST", "/v1/conversations/"+id+"/turns/"+ts.Turn+"/cancel", "")
	if status != http.StatusNotFound {
		t.Fatalf("cancelling a finished turn: %d %s", status, body)
	}
	msgs, _ := f.store.Messages(context.Background(), id)
	if len(msgs) != 4 {
		t.Fatalf("%d messages stored, want the prompt, the call, its result and the answer", len(msgs))
	}
}

// A queued turn whose conversation another writer holds is not run: its
// job fails with the holder, to be tried again.
func TestAQueuedTurnOnAHeldConversationFailsToBeTriedAgain(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "done"})
	id := f.newConversation()
	if _, err := f.store.Claim(context.Background(), id, history.NewHolder(), history.DefaultLease); err != nil {
		t.Fatal(err)
	}
	err := f.srv.RunQueued(context.Background(), id, QueuedTurn{Turn: "turn_x"})
	var held *history.HeldError
	if !errors.As(err, &held) || len(f.fake.Requests()) != 0 {
		t.Fatalf("RunQueued on a held conversation: %v after %d requests", err, len(f.fake.Requests()))
	}
}
