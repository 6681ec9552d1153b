package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/server"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// The fence tests play several workers in one process. Each runs with a
// store of its own whose claims are timed by a clock of its own: the
// first worker (A) by the database's, a later one hours ahead, so that to
// it the claims of those before have run out — a pause past the lease,
// without sleeping. Beats and job attempts are aged with UPDATEs, so that
// the give-back (rescue) is called by the test, not left to a timer.

// ahead opens the test's schema again with claims timed d ahead of now.
func ahead(t *testing.T, s *postgres.Store, d time.Duration) *postgres.Store {
	t.Helper()
	var schema string
	if err := s.Pool().QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	o, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Options{Schema: schema, Now: func() time.Time { return time.Now().Add(d) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// turnWorkerOn is one worker process of the fence tests: a server whose
// agent runs on store with the fake provider, its events in the shared
// log, and a queue of one worker running run (the server's RunQueued when
// nil; else what run makes of the server), started. lease is the claims'
// and the queue's (0: history.DefaultLease).
func turnWorkerOn(t *testing.T, store *postgres.Store, fake *providertest.Server, lease time.Duration, run func(*server.Server) func(context.Context, string, server.QueuedTurn) error) (*server.Server, *Queue) {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: fake.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return turnWorkerWith(t, store, p, lease, run)
}

// turnWorkerWith is turnWorkerOn with the provider p.
func turnWorkerWith(t *testing.T, store *postgres.Store, p provider.Provider, lease time.Duration, run func(*server.Server) func(context.Context, string, server.QueuedTurn) error) (*server.Server, *Queue) {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	a := &agent.Agent{Provider: p, Store: store, Tools: &tool.Registry{}, Env: result.Env{Store: ws}, Model: "claude-test", Lease: lease}
	api := &server.Server{Agent: a, Workspace: ws, Events: NewEvents(store.Pool(), EventsOptions{})}
	runs := api.RunQueued
	if run != nil {
		runs = run(api)
	}
	q, err := New(store, store.Pool(), runs, Options{Workers: 1, Poll: 50 * time.Millisecond, Lease: lease, End: api.EndQueued})
	if err != nil {
		t.Fatal(err)
	}
	api.Queue = q
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		q.Stop(ctx)
		api.Close()
		api.Events.(*Events).Close()
	})
	return api, q
}

// pause stops q's beats (its process paused: no beat, no renewal) and
// ages its last beat and the attempts of the running jobs past any lease.
func pause(t *testing.T, s *postgres.Store, q *Queue) {
	t.Helper()
	q.stop()
	<-q.alive
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `UPDATE myelin_workers SET beat = now() - interval '1 hour' WHERE id = $1`, q.id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE river_job SET attempted_at = now() - interval '1 hour' WHERE state = 'running'`); err != nil {
		t.Fatal(err)
	}
}

// heldProvider is a fake provider whose first request waits (the worker
// sending it is then mid-turn) until resume is closed; arrived is closed
// when it came.
func heldProvider(t *testing.T, text string) (fake *providertest.Server, arrived, resume chan struct{}) {
	fake = providertest.NewAnthropic(t)
	arrived, resume = make(chan struct{}), make(chan struct{})
	var once sync.Once
	fake.Respond = func(providertest.Request) providertest.Step {
		once.Do(func() { close(arrived) })
		<-resume
		return providertest.Step{Text: text}
	}
	return fake, arrived, resume
}

// reporting is a worker's run that is its server's RunQueued and sends
// the error of each return to returned.
func reporting(returned chan<- error) func(*server.Server) func(context.Context, string, server.QueuedTurn) error {
	return func(api *server.Server) func(context.Context, string, server.QueuedTurn) error {
		return func(ctx context.Context, conv string, t server.QueuedTurn) error {
			err := api.RunQueued(ctx, conv, t)
			returned <- err
			return err
		}
	}
}

func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not happen within a minute", what)
		panic("unreachable")
	}
}

// waitPending waits (a bounded while) until conversation conv's pending
// turn is want, and returns what it last was.
func waitPending(t *testing.T, q *Queue, conv, want string) string {
	t.Helper()
	var got string
	for range 1200 {
		var err error
		if got, err = q.Pending(context.Background(), conv); err != nil {
			t.Fatal(err)
		}
		if got == want {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return got
}

// jobStates are conversation conv's jobs' states, oldest first.
func jobStates(t *testing.T, s *postgres.Store, conv string) string {
	t.Helper()
	var states []string
	if err := s.Pool().QueryRow(context.Background(), `SELECT coalesce(array_agg(state::text ORDER BY id), '{}') FROM river_job
		WHERE args->>'conversation' = $1`, conv).Scan(&states); err != nil {
		t.Fatal(err)
	}
	return strings.Join(states, " ")
}

// finishedEvents are the data of conversation conv's turn.finished events,
// and whether a claim_lost notice came.
func finishedEvents(t *testing.T, s *postgres.Store, conv string) (finished []string, claimLost bool) {
	t.Helper()
	ev := NewEvents(s.Pool(), EventsOptions{})
	defer ev.Close()
	page, err := ev.Since(context.Background(), conv, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		switch {
		case e.Type == server.EventTurnFinished:
			finished = append(finished, string(e.Data))
		case e.Type == server.EventNotice && strings.Contains(string(e.Data), `"kind":"claim_lost"`):
			claimLost = true
		}
	}
	return finished, claimLost
}

// runningOnA queues turn turn_1 of a new conversation c1 and has worker
// A (claims on the database's clock) take it: A is mid-turn, its request
// held until resume is closed; returned gets what its RunQueued returns.
// lease is A's (0: history.DefaultLease).
func runningOnA(t *testing.T, lease time.Duration) (s *postgres.Store, qa *Queue, resume chan struct{}, returned chan error) {
	t.Helper()
	s, _ = open(t)
	newConv(t, s, "c1")
	fake, arrived, resume := heldProvider(t, "from A")
	returned = make(chan error, 4)
	_, qa = turnWorkerOn(t, s, fake, lease, reporting(returned))
	if err := qa.Enqueue(context.Background(), "c1", server.QueuedTurn{Turn: "turn_1"}, userText("go")); err != nil {
		t.Fatal(err)
	}
	within(t, arrived, "worker A's request")
	return s, qa, resume, returned
}

// resumeA lets A go on and waits for its RunQueued, which must fail with
// a lost claim; then it stops A's queue, so that what A reported to River
// is written.
func resumeA(t *testing.T, qa *Queue, resume chan struct{}, returned chan error) {
	t.Helper()
	close(resume)
	if err := within(t, returned, "worker A's return"); !errors.Is(err, history.ErrClaimLost) {
		t.Errorf("A's turn after another took its claim returned %v, want an error wrapping history.ErrClaimLost", err)
	}
	stopQueue(t, qa)
}

// stopQueue stops q, so that what its workers reported to River is
// written.
func stopQueue(t *testing.T, q *Queue) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// finishedByC has worker C, whose clock is two hours ahead (every claim
// before has run out), take conversation c1's job and checks that it
// finished the turn: the prompt and C's answer stored, one turn.finished
// (C's), and A's claim_lost notice.
func finishedByC(t *testing.T, s *postgres.Store, q *Queue) {
	t.Helper()
	turnWorkerOn(t, ahead(t, s, 2*time.Hour), providertest.NewAnthropic(t, providertest.Step{Text: "from C"}), 0, nil)
	if tid := waitPending(t, q, "c1", ""); tid != "" {
		t.Fatalf("turn %s is still pending after C took its job (jobs: %s)", tid, jobStates(t, s, "c1"))
	}
	msgs, err := s.Messages(context.Background(), "c1")
	if err != nil || len(msgs) != 2 || msgs[1].Role != history.Assistant || msgs[1].Parts[0].Text != "from C" {
		t.Fatalf("stored %+v (%v), want the prompt and C's answer", msgs, err)
	}
	finished, claimLost := finishedEvents(t, s, "c1")
	if len(finished) != 1 || !strings.Contains(finished[0], `"reason":"end_turn"`) {
		t.Fatalf("turn.finished events %v, want C's alone (end_turn)", finished)
	}
	if !claimLost {
		t.Fatal("A reported no claim_lost notice")
	}
}

// The exact sequence of issue 26: worker A runs a turn and is paused past
// its lease; its job is given back and worker B takes the turn over, then
// dies; A resumes and finds its claim lost. A must leave the job to B
// (not complete it, though its own attempt ran to an end), so that B's
// death gives the job back again and a third worker finishes the turn —
// with one turn.finished, the finishing worker's, and A's claim_lost
// notice instead of a turn.finished of its own.
func TestAWorkerPausedPastItsLeaseLeavesTheJobToTheWorkerThatTookItOver(t *testing.T) {
	s, qa, resume, returnedA := runningOnA(t, 0)
	ctx := context.Background()

	// A is paused past its lease: its job is given back
	pause(t, s, qa)
	if n, err := rescue(ctx, s.Pool(), time.Minute); err != nil || n != 1 {
		t.Fatalf("the give-back of paused A's job: %d, %v; want 1", n, err)
	}

	// B takes the turn over (A's claim has run out by B's clock), then dies
	storeB := ahead(t, s, time.Hour)
	tookB, dead := make(chan error, 1), make(chan struct{})
	t.Cleanup(func() { close(dead) })
	_, qb := turnWorkerOn(t, storeB, providertest.NewAnthropic(t), 0, func(*server.Server) func(context.Context, string, server.QueuedTurn) error {
		return func(ctx context.Context, conv string, _ server.QueuedTurn) error {
			_, err := storeB.Claim(ctx, conv, history.NewHolder(), time.Minute)
			tookB <- err
			select {
			case <-dead:
			case <-ctx.Done():
			}
			return ctx.Err()
		}
	})
	if err := within(t, tookB, "worker B's takeover"); err != nil {
		t.Fatalf("B taking the conversation over: %v", err)
	}
	pause(t, s, qb)

	// A resumes: its answer is refused (fenced), and it reports to River
	resumeA(t, qa, resume, returnedA)
	if tid, err := qa.Pending(ctx, "c1"); tid != "turn_1" || err != nil {
		t.Fatalf("after fenced A reported, the turn pending is %q (%v; jobs: %s), want turn_1 still B's", tid, err, jobStates(t, s, "c1"))
	}

	// B is dead: its job is given back, and C finishes the turn
	if n, err := rescue(ctx, s.Pool(), time.Minute); err != nil || n != 1 {
		t.Fatalf("the give-back of dead B's job: %d, %v; want 1 (jobs: %s)", n, err, jobStates(t, s, "c1"))
	}
	finishedByC(t, s, qa)
	if got := jobStates(t, s, "c1"); got != "discarded discarded completed" {
		t.Fatalf("jobs %s, want A's and B's discarded (given back) and C's completed", got)
	}
}

// A worker whose conversation a writer that is no worker (a `myelin run`
// on the same store) took over midway — its job not given back, still its
// own — does not complete the job either: it is snoozed, so that once
// that writer is gone a worker finishes the turn.
func TestAWorkerWhoseClaimAnotherWriterTookLeavesTheTurnQueued(t *testing.T) {
	s, qa, resume, returnedA := runningOnA(t, 0)
	ctx := context.Background()
	// the writer takes the conversation (A's claim has run out by its
	// clock) and dies without a word
	if _, err := ahead(t, s, time.Hour).Claim(ctx, "c1", history.NewHolder(), time.Minute); err != nil {
		t.Fatal(err)
	}
	resumeA(t, qa, resume, returnedA)
	if tid, err := qa.Pending(ctx, "c1"); tid != "turn_1" || err != nil {
		t.Fatalf("after A lost its claim, the turn pending is %q (%v; jobs: %s), want turn_1 still queued", tid, err, jobStates(t, s, "c1"))
	}
	finishedByC(t, s, qa)
}

// A worker paused past the beat but not past its claim (its job given
// back while it in fact lives) goes on with the turn when it resumes and
// finishes it; the job it goes on as, meanwhile snoozed by the live
// claim, then finds the turn ended — completed once, by its own worker,
// not by the paused one's report on the job it no longer has.
func TestATurnGivenBackFromALiveWorkerIsFinishedByItAndEndsItsNewJob(t *testing.T) {
	const lease = 2 * time.Second
	s, qa, resume, returnedA := runningOnA(t, lease)
	ctx := context.Background()
	pause(t, s, qa) // A's beats stop; its claim, on its own heartbeat, lives
	if n, err := rescue(ctx, s.Pool(), time.Minute); err != nil || n != 1 {
		t.Fatalf("the give-back of paused A's job: %d, %v; want 1", n, err)
	}
	_, qc := turnWorkerOn(t, s, providertest.NewAnthropic(t), lease, nil)
	snoozed := 0
	for i := 0; snoozed == 0 && i < 1200; i++ {
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce((metadata->>'snoozes')::int, 0) FROM river_job
			WHERE state <> 'discarded' AND args->>'conversation' = 'c1'`).Scan(&snoozed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if snoozed == 0 {
		t.Fatalf("the job given back was never snoozed by A's live claim (jobs: %s)", jobStates(t, s, "c1"))
	}
	close(resume)
	if err := within(t, returnedA, "worker A's return"); err != nil {
		t.Fatalf("A, resumed with its claim, returned %v, want nil (the turn ended)", err)
	}
	stopQueue(t, qa)
	if tid := waitPending(t, qc, "c1", ""); tid != "" {
		t.Fatalf("turn %s is still pending after A finished it (jobs: %s)", tid, jobStates(t, s, "c1"))
	}
	if got := jobStates(t, s, "c1"); got != "discarded completed" {
		t.Fatalf("jobs %s, want A's discarded (given back) and the new one completed", got)
	}
	msgs, err := s.Messages(ctx, "c1")
	if err != nil || len(msgs) != 2 || msgs[1].Parts[0].Text != "from A" {
		t.Fatalf("stored %+v (%v), want the prompt and A's answer", msgs, err)
	}
	finished, _ := finishedEvents(t, s, "c1")
	if len(finished) != 2 || !strings.Contains(finished[0], `"reason":"end_turn"`) || !strings.Contains(finished[1], `"reason":"already_ended"`) {
		t.Fatalf("turn.finished events %v, want A's (end_turn), then the new job's (already_ended)", finished)
	}
}

// A cancel that looked the turn's job up just before it was given back
// (its worker dead) follows it to the job it goes on as: the turn is
// cancelled and its conversation answered, not left to run on.
func TestACancelFollowsATurnGivenBackMeanwhile(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	q := queuedWithADeadWorkersCall(t, s, func(context.Context, string, server.QueuedTurn) error { return nil }, Options{})
	runningSince(t, s, "dead", "1 hour")
	j, err := q.job(ctx, "c1")
	if err != nil || j == nil {
		t.Fatalf("the running job: %v, %v", j, err)
	}
	if n, err := rescue(ctx, s.Pool(), time.Minute); err != nil || n != 1 {
		t.Fatalf("the give-back: %d, %v; want 1", n, err)
	}
	if found, before, err := q.cancel(ctx, "c1", "turn_1", j); !found || !before || err != nil {
		t.Fatalf("cancel after the give-back = %v, %v, %v; want found, cancelled before a worker took it", found, before, err)
	}
	if got := jobStates(t, s, "c1"); got != "discarded cancelled" {
		t.Fatalf("jobs %s, want the given-back one discarded and the one it went on as cancelled", got)
	}
	msgs, _ := s.Messages(ctx, "c1")
	if len(msgs) != 4 || msgs[3].Role != history.Assistant || !msgs[3].Cut {
		t.Fatalf("stored %d messages %+v, want the prompt, the call, its interrupted result and a cut answer", len(msgs), msgs)
	}
}
