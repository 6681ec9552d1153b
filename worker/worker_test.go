package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/server"
)

// open opens a Postgres store on a new schema, with the workers' tables.
func open(t *testing.T) (*postgres.Store, func() *postgres.Store) {
	t.Helper()
	name, _ := pgtest.Schema(t)
	dsn := pgtest.DSN(t)
	reopen := func() *postgres.Store {
		t.Helper()
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := Migrate(context.Background(), s.Pool()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	return reopen(), reopen
}

func userText(s string) history.Message {
	return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

func newConv(t *testing.T, s history.Store, id string) {
	t.Helper()
	if err := s.Create(context.Background(), history.Conversation{ID: id, System: "s"}); err != nil {
		t.Fatal(err)
	}
}

// A turn is queued with its prompt, both or neither: a second turn while
// one is queued is refused naming the first, its prompt not stored; the
// worker runs the job, and a job whose conversation a live writer holds is
// snoozed and run once the writer is gone.
func TestATurnIsQueuedWithItsPromptOnceAndRunByAWorker(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	newConv(t, s, "c1")
	var mu sync.Mutex
	var runs []string
	ran := make(chan string, 4)
	run := func(ctx context.Context, conv string, q server.QueuedTurn) error {
		mu.Lock()
		runs = append(runs, q.Turn)
		mu.Unlock()
		if _, err := s.Claim(ctx, conv, history.NewHolder(), time.Minute); err != nil {
			return err
		}
		ran <- q.Turn
		return nil
	}
	q, err := New(s, s.Pool(), run, Options{Workers: 2, Poll: 50 * time.Millisecond, Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, "c1", server.QueuedTurn{Turn: "turn_1", Model: "m"}, userText("first")); err != nil {
		t.Fatal(err)
	}
	err = q.Enqueue(ctx, "c1", server.QueuedTurn{Turn: "turn_2"}, userText("second"))
	var queued *server.QueuedError
	if !errors.As(err, &queued) || queued.Turn != "turn_1" {
		t.Fatalf("a second turn while one is queued: %v", err)
	}
	if msgs, _ := s.Messages(ctx, "c1"); len(msgs) != 1 || msgs[0].Parts[0].Text != "first" {
		t.Fatalf("stored %+v, want the first prompt alone", msgs)
	}
	if tid, err := q.Pending(ctx, "c1"); tid != "turn_1" || err != nil {
		t.Fatalf("Pending = %q, %v", tid, err)
	}
	h, err := s.Claim(ctx, "c1", history.NewHolder(), time.Minute) // a live writer: the job waits for it
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Stop(context.Background()) })
	// the job meets the live claim and is snoozed; released, it runs
	for {
		mu.Lock()
		n := len(runs)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Release(ctx, "c1", h); err != nil {
		t.Fatal(err)
	}
	select {
	case tid := <-ran:
		if tid != "turn_1" {
			t.Fatalf("ran %s", tid)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the snoozed job did not run once the claim was released")
	}
}

// A turn cancelled before a worker took it is cancelled at once and its
// prompt answered, so that the conversation stays valid; a new turn can be
// queued after it.
func TestATurnCancelledBeforeItRunsIsAnsweredAndFreesTheConversation(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	newConv(t, s, "c1")
	q, err := New(s, s.Pool(), func(context.Context, string, server.QueuedTurn) error { return nil }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, "c1", server.QueuedTurn{Turn: "turn_1"}, userText("first")); err != nil {
		t.Fatal(err)
	}
	if found, _, err := q.Cancel(ctx, "c1", "turn_other"); found || err != nil {
		t.Fatalf("cancelling another turn: %v, %v", found, err)
	}
	found, before, err := q.Cancel(ctx, "c1", "turn_1")
	if !found || !before || err != nil {
		t.Fatalf("Cancel = %v, %v, %v", found, before, err)
	}
	msgs, _ := s.Messages(ctx, "c1")
	if len(msgs) != 2 || msgs[1].Role != history.Assistant || !msgs[1].Cut {
		t.Fatalf("stored %+v, want the prompt and a cut answer", msgs)
	}
	if err := q.Enqueue(ctx, "c1", server.QueuedTurn{Turn: "turn_2"}, userText("again")); err != nil {
		t.Fatalf("a turn after a cancelled one: %v", err)
	}
}

// Events appended by one process are read by another in order, woken by
// its notification; text deltas wait to be written with the next event;
// the numbers go on after a restart; only the last Keep are kept.
func TestEventsReachAnotherProcessInOrderAndSurviveARestart(t *testing.T) {
	s, reopen := open(t)
	ctx := context.Background()
	writer := NewEvents(s.Pool(), EventsOptions{Keep: 8, Flush: time.Hour})
	reader := NewEvents(reopen().Pool(), EventsOptions{Keep: 8})
	t.Cleanup(func() { reader.Close() })
	page, err := reader.Since(ctx, "c1", 0)
	if err != nil || len(page.Events) != 0 {
		t.Fatalf("an empty log: %+v, %v", page, err)
	}
	if err := writer.Append(ctx, "c1", server.EventModelDelta, json.RawMessage(`{"text":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if last, _ := reader.Last(ctx, "c1"); last != 0 {
		t.Fatalf("a delta was written before the next event (last %d)", last)
	}
	if err := writer.Append(ctx, "c1", server.EventTurnFinished, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-page.More:
	case <-time.After(30 * time.Second):
		t.Fatal("the reader was not woken by the writer's notification")
	}
	page, err = reader.Since(ctx, "c1", 0)
	if err != nil || len(page.Events) != 2 || page.Events[0].Type != server.EventModelDelta || page.Events[1].Seq != 2 || string(page.Events[0].Data) != `{"text":"a"}` {
		t.Fatalf("read %+v, %v", page.Events, err)
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := NewEvents(reopen().Pool(), EventsOptions{Keep: 8})
	t.Cleanup(func() { restarted.Close() })
	for i := range 10 {
		if err := restarted.Append(ctx, "c1", "notice", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	page, err = reader.Since(ctx, "c1", 1)
	if err != nil || len(page.Events) == 0 || page.Events[len(page.Events)-1].Seq != 12 || page.Gone != page.Events[0].Seq-2 || page.Gone == 0 {
		t.Fatalf("after a restart and past Keep: %d events from %d, gone %d, %v", len(page.Events), page.Events[0].Seq, page.Gone, err)
	}
	if page, _ := reader.Since(ctx, "c1", 99); !page.Restarted {
		t.Fatal("an id the log never gave is not taken as from before a restart")
	}
}

// A running turn's job whose worker stopped beating is given back to the
// queue — as a new job carrying its attempts, the old one discarded and
// naming it — ; one whose worker beats is left to it.
func TestATurnOfADeadWorkerIsGivenBackAndALiveOnesIsNot(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	q, err := New(s, s.Pool(), func(context.Context, string, server.QueuedTurn) error { return nil }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"dead", "live"} {
		newConv(t, s, c)
		if err := q.Enqueue(ctx, c, server.QueuedTurn{Turn: "turn_" + c}, userText("go")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `UPDATE river_job SET state = 'running', attempted_at = now() - interval '1 hour',
			attempted_by = ARRAY['worker-'||$1] WHERE args->>'conversation' = $1`, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := beat(ctx, s.Pool(), "worker-live"); err != nil {
		t.Fatal(err)
	}
	n, err := rescue(ctx, s.Pool(), time.Minute)
	if err != nil || n != 1 {
		t.Fatalf("rescue gave back %d jobs (%v), want the dead worker's", n, err)
	}
	var states []string
	if err := s.Pool().QueryRow(ctx, `SELECT array_agg(args->>'conversation' || ':' || state || ':' || attempt ORDER BY id) FROM river_job`).Scan(&states); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(states) != "[dead:discarded:0 live:running:0 dead:available:0]" {
		t.Fatalf("jobs (conversation:state:attempt) %v, want the dead worker's discarded and given back as a new one", states)
	}
	var named bool
	if err := s.Pool().QueryRow(ctx, `SELECT (o.metadata->>'`+givenBackAs+`')::bigint = n.id FROM river_job o, river_job n
		WHERE o.state = 'discarded' AND n.state = 'available'`).Scan(&named); err != nil || !named {
		t.Fatalf("the discarded job does not name the one it goes on as (%v)", err)
	}
}

// A turn whose worker died mid-round (its job given back, attempted once)
// and that is then cancelled before another worker takes it leaves the
// conversation valid: the dead worker's calls are answered before the cut
// answer, not left without results under it.
func TestCancellingATurnGivenBackAfterItsWorkerDiedAnswersItsCalls(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	q := queuedWithADeadWorkersCall(t, s, func(context.Context, string, server.QueuedTurn) error { return nil }, Options{})
	// the worker that took it died; rescue gave the job back
	if _, err := s.Pool().Exec(ctx, `UPDATE river_job SET attempt = 1, attempted_by = '{dead}', state = 'available' WHERE kind = $1`, Kind); err != nil {
		t.Fatal(err)
	}
	if found, before, err := q.Cancel(ctx, "c1", "turn_1"); !found || !before || err != nil {
		t.Fatalf("Cancel = %v, %v, %v", found, before, err)
	}
	msgs, _ := s.Messages(ctx, "c1")
	if len(msgs) != 4 {
		t.Fatalf("stored %d messages %+v, want the prompt, the call, its interrupted result and a cut answer", len(msgs), msgs)
	}
	res := msgs[2].Parts
	if msgs[2].Role != history.User || len(res) != 1 || res[0].Type != history.ToolResultPart || res[0].CallID != "call_1" || !res[0].IsError {
		t.Fatalf("after the dead worker's call: %+v, want its interrupted result", msgs[2])
	}
	if msgs[3].Role != history.Assistant || !msgs[3].Cut {
		t.Fatalf("last: %+v, want a cut answer", msgs[3])
	}
}

// A turn cancelled while its worker was dead (the cancel answered
// "cancelling", the job still running in the database) is not run to its
// end by the worker that takes it over: its job is cancelled and the
// conversation left valid, as River's own rescuer would do.
func TestATurnCancelledWhileItsWorkerWasDeadIsNotRunByTheNext(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	ran := make(chan string, 1)
	run := func(_ context.Context, _ string, q server.QueuedTurn) error { ran <- q.Turn; return nil }
	q := queuedWithADeadWorkersCall(t, s, run, Options{Workers: 1, Poll: 50 * time.Millisecond, Lease: 300 * time.Millisecond})
	// then the cancel came
	runningSince(t, s, "dead", "1 hour")
	cancelRunningAndStart(t, q)
	var state string
	for i := 0; ; i++ {
		select {
		case tid := <-ran:
			t.Fatalf("the cancelled turn %s was run by the worker that took it over", tid)
		default:
		}
		state = newestJobState(t, s)
		if state == "cancelled" || i == 600 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if state != "cancelled" {
		t.Fatalf("the job given back is %s, want cancelled", state)
	}
	msgs, _ := s.Messages(ctx, "c1")
	if len(msgs) != 4 || msgs[2].Role != history.User || msgs[3].Role != history.Assistant || !msgs[3].Cut {
		t.Fatalf("stored %d messages %+v, want the prompt, the call, its interrupted result and a cut answer", len(msgs), msgs)
	}
}

// queuedWithADeadWorkersCall makes conversation c1 with turn turn_1 queued
// on a new queue, and the call a worker that took it asked for before it
// died (no result stored).
func queuedWithADeadWorkersCall(t *testing.T, s *postgres.Store, run func(context.Context, string, server.QueuedTurn) error, opts Options) *Queue {
	t.Helper()
	ctx := context.Background()
	newConv(t, s, "c1")
	q, err := New(s, s.Pool(), run, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, "c1", server.QueuedTurn{Turn: "turn_1"}, userText("first")); err != nil {
		t.Fatal(err)
	}
	call := history.Message{Role: history.Assistant, Parts: []history.Part{
		{Type: history.ToolCallPart, CallID: "call_1", Name: "shell--run", Input: json.RawMessage(`{"command":"true"}`)}}}
	if err := s.Append(ctx, "c1", call); err != nil {
		t.Fatal(err)
	}
	return q
}

// A deleted conversation's events go, waiting ones included; another
// conversation's stay.
func TestDroppingAConversationsEventsLeavesTheOthers(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	e := NewEvents(s.Pool(), EventsOptions{Flush: time.Hour})
	t.Cleanup(func() { e.Close() })
	for _, conv := range []string{"gone", "kept"} {
		if err := e.Append(ctx, conv, "notice", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Append(ctx, "gone", server.EventModelDelta, json.RawMessage(`{"text":"waiting"}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.Drop(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil { // writes what waits: nothing of gone's
		t.Fatal(err)
	}
	other := NewEvents(s.Pool(), EventsOptions{})
	t.Cleanup(func() { other.Close() })
	if last, err := other.Last(ctx, "gone"); err != nil || last != 0 {
		t.Errorf("the dropped conversation's last event: %d, %v; want none", last, err)
	}
	if page, err := other.Since(ctx, "gone", 0); err != nil || len(page.Events) != 0 {
		t.Errorf("the dropped conversation's events: %+v, %v; want none", page.Events, err)
	}
	if last, err := other.Last(ctx, "kept"); err != nil || last != 1 {
		t.Errorf("the other conversation's last event: %d, %v; want 1", last, err)
	}
}

// runningSince makes c1's turn job running, taken by worker by the
// interval ago ago (a Postgres interval: "1 hour"), as if that worker had
// taken it then.
func runningSince(t *testing.T, s *postgres.Store, by, ago string) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(), `UPDATE river_job SET attempt = 1, attempted_by = ARRAY[$2], state = 'running',
		attempted_at = now() - $3::interval WHERE kind = $1`, Kind, by, ago); err != nil {
		t.Fatal(err)
	}
}

// cancelRunningAndStart cancels c1's running turn_1 on q (the cancel
// noted, the job left to its worker) and starts q's workers, stopped at
// the test's end.
func cancelRunningAndStart(t *testing.T, q *Queue) {
	t.Helper()
	ctx := context.Background()
	if found, before, err := q.Cancel(ctx, "c1", "turn_1"); !found || before || err != nil {
		t.Fatalf("Cancel of a running turn = %v, %v, %v", found, before, err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Stop(context.Background()) })
}

// newestJobState is the state of the newest turn job.
func newestJobState(t *testing.T, s *postgres.Store) string {
	t.Helper()
	var state string
	if err := s.Pool().QueryRow(context.Background(), `SELECT state FROM river_job WHERE kind = $1 ORDER BY id DESC LIMIT 1`, Kind).Scan(&state); err != nil {
		t.Fatal(err)
	}
	return state
}
