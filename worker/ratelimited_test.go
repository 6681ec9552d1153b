package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/server"
)

// limitedKeys is a wire whose requests are held at their key's rate limit
// as a wire with a limiter holds them: a conversation (named by its first
// prompt, standing for its key) takes the next of its waits for each
// request (none left: sent at once), tells it (provider.NoticeWait) and
// waits it out, or until its context ends, as ratelimit.Limiter.Wait does.
type limitedKeys struct {
	provider.Provider
	mu    sync.Mutex
	waits map[string][]time.Duration
}

func (l *limitedKeys) WireName() string { return provider.WireName(l.Provider) }

func (l *limitedKeys) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	key := req.Messages[0].Parts[0].Text
	l.mu.Lock()
	var d time.Duration
	if w := l.waits[key]; len(w) > 0 {
		d, l.waits[key] = w[0], w[1:]
	}
	l.mu.Unlock()
	if d > 0 {
		provider.NoticeWait(ctx, provider.WaitNotice{Attempt: 1, Until: time.Now().Add(d),
			Why: fmt.Sprintf("429 from api.anthropic.com: retry after %s", d), URL: "https://api.anthropic.com/v1/messages"})
		select {
		case <-ctx.Done():
			return provider.Response{}, fmt.Errorf("waiting for the rate limit of %q: %w", key, ctx.Err())
		case <-time.After(d):
		}
	}
	return l.Provider.Complete(ctx, req, onText)
}

// jobOf is conversation conv's latest job's state and when it is
// scheduled for.
func jobOf(t *testing.T, s *postgres.Store, conv string) (state string, at time.Time) {
	t.Helper()
	if err := s.Pool().QueryRow(context.Background(), `SELECT state::text, scheduled_at FROM river_job
		WHERE args->>'conversation' = $1 ORDER BY id DESC LIMIT 1`, conv).Scan(&state, &at); err != nil {
		t.Fatal(err)
	}
	return state, at
}

// Issue 32 point 4: a queued turn whose request must wait at its key's
// rate limit for longer than server.HoldOver is not held by its worker.
// The worker hands the turn back and River snoozes its job until the
// limit allows (scheduled, at the wait's end; not a failed attempt), so
// the worker — one here — runs another key's turn meanwhile. Nothing is
// lost: the prompt stays, no cut answer is stored, the watchers get the
// waiting event and a rate_limited notice, no turn.finished; once the
// wait is over the job runs again and the turn finishes, with one
// turn.finished.
func TestATurnHeldLongAtItsRateLimitIsSnoozedWhileAnotherKeysTurnRuns(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	newConv(t, s, "c1")
	newConv(t, s, "c2")
	fake := providertest.NewAnthropic(t)
	fake.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "done"} }
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: fake.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	held := &limitedKeys{Provider: p, waits: map[string][]time.Duration{"on the limited key": {time.Minute}}}
	_, q := turnWorkerWith(t, s, held, 0, nil)

	before := time.Now()
	if err := q.Enqueue(ctx, "c1", server.QueuedTurn{Turn: "turn_1"}, userText("on the limited key")); err != nil {
		t.Fatal(err)
	}
	state, at := jobOf(t, s, "c1")
	for i := 0; i < 600 && state != "scheduled"; i++ {
		time.Sleep(50 * time.Millisecond)
		state, at = jobOf(t, s, "c1")
	}
	if state != "scheduled" || at.Before(before.Add(55*time.Second)) || at.After(time.Now().Add(65*time.Second)) {
		t.Fatalf("turn_1's job is %s, scheduled at %v; want it snoozed (scheduled) until the wait's end, a minute on (jobs: %s)", state, at, jobStates(t, s, "c1"))
	}

	// the worker runs another key's turn while the first waits
	if err := q.Enqueue(ctx, "c2", server.QueuedTurn{Turn: "turn_2"}, userText("on a free key")); err != nil {
		t.Fatal(err)
	}
	if tid := waitPending(t, q, "c2", ""); tid != "" {
		t.Fatalf("turn_2 (another key) is still pending while turn_1 waits for its limit: the worker is held (jobs: %s)", jobStates(t, s, "c2"))
	}
	if msgs, err := s.Messages(ctx, "c2"); err != nil || len(msgs) != 2 || msgs[1].Parts[0].Text != "done" {
		t.Fatalf("c2 stored %+v (%v); want its prompt and answer", msgs, err)
	}
	if state, _ := jobOf(t, s, "c1"); state != "scheduled" {
		t.Fatalf("turn_1's job is %s while turn_2 ran; want it still scheduled", state)
	}
	if msgs, err := s.Messages(ctx, "c1"); err != nil || len(msgs) != 1 {
		t.Fatalf("c1 stored %+v (%v) while its turn waits in the queue; want the prompt alone (no cut answer)", msgs, err)
	}
	if n := fake.Requests(); len(n) != 1 {
		t.Fatalf("the provider got %d requests; want c2's alone (c1's was held)", len(n))
	}
	finished, _ := finishedEvents(t, s, "c1")
	if len(finished) != 0 {
		t.Fatalf("turn_1 reported turn.finished %v while it waits in the queue; want none", finished)
	}
	waited, told := rateLimitEvents(t, s, "c1")
	if waited != 1 || !told {
		t.Fatalf("c1's watchers got %d waiting event(s) and a rate_limited notice %v; want one of each", waited, told)
	}

	// the wait is over: River's scheduler makes the job available (here
	// the test does, not to wait its interval), and a worker finishes it
	if _, err := s.Pool().Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now()
		WHERE args->>'conversation' = 'c1' AND state = 'scheduled'`); err != nil {
		t.Fatal(err)
	}
	if tid := waitPending(t, q, "c1", ""); tid != "" {
		t.Fatalf("turn_1 is still pending once its wait was over (jobs: %s)", jobStates(t, s, "c1"))
	}
	msgs, err := s.Messages(ctx, "c1")
	if err != nil || len(msgs) != 2 || msgs[1].Role != history.Assistant || msgs[1].Cut || msgs[1].Parts[0].Text != "done" {
		t.Fatalf("c1 stored %+v (%v); want the prompt and the whole answer", msgs, err)
	}
	finished, _ = finishedEvents(t, s, "c1")
	if len(finished) != 1 || !strings.Contains(finished[0], `"reason":"end_turn"`) {
		t.Fatalf("turn_1's turn.finished events %v; want one, end_turn", finished)
	}
	var attempt, errs int
	if err := s.Pool().QueryRow(ctx, `SELECT attempt, coalesce(cardinality(errors), 0) FROM river_job
		WHERE args->>'conversation' = 'c1'`).Scan(&attempt, &errs); err != nil {
		t.Fatal(err)
	}
	if attempt != 1 || errs != 0 {
		t.Errorf("turn_1's job ended at attempt %d with %d error(s); want one attempt and no error (a wait for the limit is not a failure)", attempt, errs)
	}
}

// rateLimitEvents counts conversation conv's waiting events, and says
// whether a rate_limited notice came.
func rateLimitEvents(t *testing.T, s *postgres.Store, conv string) (waiting int, rateLimited bool) {
	t.Helper()
	ev := NewEvents(s.Pool(), EventsOptions{})
	defer ev.Close()
	page, err := ev.Since(context.Background(), conv, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		switch {
		case e.Type == server.EventWaiting && strings.Contains(string(e.Data), `"until":"`):
			waiting++
		case e.Type == server.EventNotice && strings.Contains(string(e.Data), `"kind":"`+server.NoticeRateLimited+`"`):
			rateLimited = true
		}
	}
	return waiting, rateLimited
}
