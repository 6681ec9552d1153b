package worker

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/server"
)

// Issue 27 §7: a `serve --worker` process told to stop (SIGTERM, SIGINT)
// hands the turn it runs back to the queue at once, rather than letting
// it run out a grace or ending it: its answer cut mid-stream is not
// stored (the turn has not ended), its claim is released, its watchers
// get a handed_back notice instead of turn.finished, and another worker
// takes the job up at once and finishes the turn — with one turn.finished,
// its own.
func TestAStoppingWorkerHandsItsRunningTurnBackForAnotherToContinue(t *testing.T) {
	s, _ := open(t)
	newConv(t, s, "c1")
	fake, arrived, resume := heldProvider(t, "never sent: A stopped")
	defer close(resume)
	returned := make(chan error, 1)
	apiA, qa := turnWorkerOn(t, s, fake, 0, func(api *server.Server) func(context.Context, string, server.QueuedTurn) error {
		return func(ctx context.Context, conv string, q server.QueuedTurn) error {
			err := api.RunQueued(ctx, conv, q)
			select {
			case returned <- err: // the first run's; later ones are refused unrun
			default:
			}
			return err
		}
	})
	if err := qa.Enqueue(context.Background(), "c1", server.QueuedTurn{Turn: "turn_1"}, userText("go")); err != nil {
		t.Fatal(err)
	}
	within(t, arrived, "worker A's request")

	grace, cancel := context.WithTimeout(context.Background(), time.Hour) // not waited for: a worker's turns go back at once
	defer cancel()
	shut := make(chan int, 1)
	go func() { shut <- apiA.Shutdown(grace) }()
	if err := within(t, returned, "worker A's return"); !errors.Is(err, agent.ErrHandedOver) {
		t.Fatalf("A's turn, as A stops, returned %v; want an error wrapping agent.ErrHandedOver", err)
	}
	if n := within(t, shut, "A's Shutdown"); n != 0 {
		t.Errorf("A's Shutdown cancelled %d turn(s); want none: a queued turn is handed back, not cancelled", n)
	}
	// and A queues no new turn: its clients are told to go elsewhere
	newConv(t, s, "c2")
	rec := httptest.NewRecorder()
	apiA.ServeHTTP(rec, httptest.NewRequest("POST", "http://127.0.0.1/v1/conversations/c2/turns", strings.NewReader(`{"prompt":"late"}`)))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "stopping") {
		t.Errorf("a turn started on A as it stops: %d %s; want 503 saying the server is stopping", rec.Code, rec.Body.String())
	}
	if tid, err := qa.Pending(context.Background(), "c2"); tid != "" || err != nil {
		t.Errorf("A queued turn %q (%v) as it stopped", tid, err)
	}
	stopQueue(t, qa)
	if msgs, err := s.Messages(context.Background(), "c1"); err != nil || len(msgs) != 1 {
		t.Fatalf("after A handed the turn back, stored %+v (%v); want the prompt alone (no cut answer: the turn has not ended)", msgs, err)
	}

	_, qb := turnWorkerOn(t, s, providertest.NewAnthropic(t, providertest.Step{Text: "from B"}), 0, nil)
	if tid := waitPending(t, qb, "c1", ""); tid != "" {
		t.Fatalf("turn %s is still pending after B started (jobs: %s)", tid, jobStates(t, s, "c1"))
	}
	msgs, err := s.Messages(context.Background(), "c1")
	if err != nil || len(msgs) != 2 || msgs[1].Role != history.Assistant || msgs[1].Cut || msgs[1].Parts[0].Text != "from B" {
		t.Fatalf("stored %+v (%v); want the prompt and B's whole answer", msgs, err)
	}
	// handed back, not failed: A's run is no attempt and no error of the job
	var attempt, errs int
	if err := s.Pool().QueryRow(context.Background(), `SELECT attempt, coalesce(cardinality(errors), 0) FROM river_job
		WHERE args->>'conversation' = 'c1'`).Scan(&attempt, &errs); err != nil {
		t.Fatal(err)
	}
	if attempt != 1 || errs != 0 {
		t.Errorf("the job ended at attempt %d with %d error(s); want B's one attempt and no error (a turn handed back is not a failed attempt)", attempt, errs)
	}
	ev := NewEvents(s.Pool(), EventsOptions{})
	defer ev.Close()
	page, err := ev.Since(context.Background(), "c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var finished []string
	handedBack := false
	for _, e := range page.Events {
		switch {
		case e.Type == server.EventTurnFinished:
			finished = append(finished, string(e.Data))
		case e.Type == server.EventNotice && strings.Contains(string(e.Data), `"kind":"`+server.NoticeHandedBack+`"`):
			handedBack = true
		}
	}
	if len(finished) != 1 || !strings.Contains(finished[0], `"reason":"end_turn"`) {
		t.Fatalf("turn.finished events %v; want B's alone (end_turn)", finished)
	}
	if !handedBack {
		t.Fatal("A's watchers got no handed_back notice")
	}
}
