package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// heldAtLimit is a wire whose requests are held at their key's rate
// limit as a wire with a limiter holds them: each request takes the next
// of waits (none left: sent at once), tells it (provider.NoticeWait) and
// waits it out, or until its context ends, as ratelimit.Limiter.Wait does.
type heldAtLimit struct {
	provider.Provider
	mu    sync.Mutex
	waits []time.Duration
}

func (h *heldAtLimit) WireName() string { return provider.WireName(h.Provider) }

func (h *heldAtLimit) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	h.mu.Lock()
	var d time.Duration
	if len(h.waits) > 0 {
		d, h.waits = h.waits[0], h.waits[1:]
	}
	h.mu.Unlock()
	if d > 0 {
		provider.NoticeWait(ctx, provider.WaitNotice{Attempt: 1, Until: time.Now().Add(d),
			Why: fmt.Sprintf("429 from api.anthropic.com: retry after %s", d), URL: "https://api.anthropic.com/v1/messages"})
		select {
		case <-ctx.Done():
			return provider.Response{}, fmt.Errorf("waiting for the rate limit of api.anthropic.com: %w", ctx.Err())
		case <-time.After(d):
		}
	}
	return h.Provider.Complete(ctx, req, onText)
}

// heldFixture is a fixture whose requests are held at the rate limit for
// waits, one after the other.
func heldFixture(t *testing.T, waits []time.Duration, steps ...providertest.Step) *fixture {
	f := newFixture(t, steps...)
	f.srv.Agent.Provider = &heldAtLimit{Provider: f.srv.Agent.Provider, waits: waits}
	return f
}

// A request held at its key's rate limit is a waiting event on the
// conversation's stream, typed apart from the notices: until when (RFC
// 3339) and, in its text, why; the turn then goes on.
func TestARequestHeldAtItsRateLimitIsAWaitingEventSayingUntilWhen(t *testing.T) {
	f := heldFixture(t, []time.Duration{50 * time.Millisecond}, providertest.Step{Text: "done"})
	id := f.newConversation()
	w := f.watch(id)
	before := time.Now()
	ts := f.startTurn(id, "go")
	evs := w.until(t, EventTurnFinished)
	var waits []waitingEvent
	for _, e := range evs {
		if e.Type == EventWaiting {
			var raw map[string]any
			mustJSON(t, e.Data, &raw)
			if _, err := time.Parse(time.RFC3339, fmt.Sprint(raw["until"])); err != nil {
				t.Errorf("the waiting event's until %v is not RFC 3339: %v", raw["until"], err)
			}
			var we waitingEvent
			mustJSON(t, e.Data, &we)
			waits = append(waits, we)
		}
		if e.Type == EventNotice && strings.Contains(string(e.Data), `"kind":"waiting"`) {
			t.Errorf("a rate limit's wait came as a notice too: %s", e.Data)
		}
	}
	if len(waits) != 1 {
		t.Fatalf("waiting events %+v in %v; want one", waits, types(evs))
	}
	we := waits[0]
	if we.Turn != ts.Turn || we.Until.Before(before.Add(50*time.Millisecond)) || we.Until.After(time.Now().Add(50*time.Millisecond)) {
		t.Errorf("waiting event %+v: want turn %s, until 50ms after the request", we, ts.Turn)
	}
	for _, want := range []string{"waiting until " + we.Until.Format("15:04:05") + " UTC", "for the rate limit of anthropic: 429 from api.anthropic.com: retry after 50ms"} {
		if !strings.Contains(we.Text, want) {
			t.Errorf("the waiting event's text %q does not say %q", we.Text, want)
		}
	}
	if last := evs[len(evs)-1]; !strings.Contains(string(last.Data), `"reason":"end_turn"`) {
		t.Errorf("the turn did not go on after its wait: %s", last.Data)
	}
}

// A wait for another writer's claim, whose end no one knows, stays a
// notice of kind waiting: only a wait with an end is a waiting event.
func TestAWaitWithoutAnEndIsANoticeOfKindWaiting(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	w := f.watch(id)
	f.srv.emitAgent(id, "turn_1", agent.Event{Kind: agent.Waiting, Text: "waiting for conversation c: another writer is advancing it"})
	e := w.next(t)
	var n noticeEvent
	mustJSON(t, e.Data, &n)
	if e.Type != EventNotice || n.Kind != "waiting" || n.Turn != "turn_1" {
		t.Fatalf("a claim's wait came as %s %s; want a notice of kind waiting", e.Type, e.Data)
	}
}

// queuedPrompt stores prompt as a new conversation's first message, as a
// queue does, and returns the conversation.
func queuedPrompt(t *testing.T, f *fixture, prompt string) string {
	t.Helper()
	id := f.newConversation()
	if err := f.store.Append(context.Background(), id, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: prompt}}}); err != nil {
		t.Fatal(err)
	}
	return id
}

// Issue 32 point 4: a queued turn whose request would wait at its key's
// rate limit for more than HoldOver is not held by its worker. RunQueued
// stops it without ending it and fails with a *RateLimitedError saying
// until when (wrapping agent.ErrHandedOver, so the job goes back to the
// queue, not as a failed attempt); nothing of the request is stored, the
// watchers see the wait and a rate_limited notice, no turn.finished. Run
// again once the limit allows, the turn finishes from what is stored.
func TestAQueuedTurnHeldLongAtItsRateLimitGoesBackToTheQueueUntilThen(t *testing.T) {
	f := heldFixture(t, []time.Duration{time.Minute}, providertest.Step{Text: "done"})
	id := queuedPrompt(t, f, "go")
	w := f.watch(id)
	before := time.Now()
	err := f.srv.RunQueued(context.Background(), id, QueuedTurn{Turn: "turn_1"})
	var rl *RateLimitedError
	if !errors.As(err, &rl) || !errors.Is(err, agent.ErrHandedOver) {
		t.Fatalf("RunQueued = %v; want a *RateLimitedError wrapping agent.ErrHandedOver", err)
	}
	if rl.Until.Before(before.Add(time.Minute)) || rl.Until.After(time.Now().Add(time.Minute)) {
		t.Errorf("RateLimitedError.Until = %v; want the wait's end, a minute after the request", rl.Until)
	}
	if msgs, _ := f.store.Messages(context.Background(), id); len(msgs) != 1 {
		t.Fatalf("stored %d messages; want the prompt alone (nothing of a request that was never sent)", len(msgs))
	}
	if n := len(f.fake.Requests()); n != 0 {
		t.Fatalf("%d requests reached the provider; want none: the request was held", n)
	}
	evs := w.until(t, EventNotice)
	for len(evs) < 8 && !strings.Contains(string(evs[len(evs)-1].Data), NoticeRateLimited) {
		evs = append(evs, w.until(t, EventNotice)...)
	}
	got := strings.Join(types(evs), " ")
	if got != EventTurnStarted+" "+EventWaiting+" "+EventNotice {
		t.Fatalf("events %s; want turn.started, the waiting event, then the rate_limited notice (no turn.finished)", got)
	}
	var n noticeEvent
	mustJSON(t, evs[2].Data, &n)
	if n.Kind != NoticeRateLimited || n.Turn != "turn_1" || !strings.Contains(n.Text, "goes back to the queue until "+rl.Until.UTC().Format("15:04:05")+" UTC") {
		t.Errorf("the last notice is %+v; want kind %s saying the turn goes back to the queue until %s UTC", n, NoticeRateLimited, rl.Until.UTC().Format("15:04:05"))
	}

	// the limit allows it now: the job, run again, finishes the turn
	if err := f.srv.RunQueued(context.Background(), id, QueuedTurn{Turn: "turn_1"}); err != nil {
		t.Fatalf("RunQueued once the limit allows: %v", err)
	}
	fin := w.until(t, EventTurnFinished)
	var tf turnFinishedEvent
	mustJSON(t, fin[len(fin)-1].Data, &tf)
	if tf.Reason != "end_turn" || tf.Text != "done" {
		t.Fatalf("turn.finished %+v; want end_turn with the answer", tf)
	}
	if msgs, _ := f.store.Messages(context.Background(), id); len(msgs) != 2 || msgs[1].Cut {
		t.Fatalf("stored %+v; want the prompt and the whole answer", msgs)
	}
}

// A short wait (HoldOver or less) is waited where the turn runs: the turn
// is not sent back to the queue for it.
func TestAQueuedTurnWaitsAShortRateLimitWhereItRuns(t *testing.T) {
	f := heldFixture(t, []time.Duration{20 * time.Millisecond}, providertest.Step{Text: "done"})
	id := queuedPrompt(t, f, "go")
	w := f.watch(id)
	if err := f.srv.RunQueued(context.Background(), id, QueuedTurn{Turn: "turn_1"}); err != nil {
		t.Fatalf("RunQueued = %v; want nil, the turn finished after its short wait", err)
	}
	evs := w.until(t, EventTurnFinished)
	got := types(evs)
	if got[1] != EventWaiting || !strings.Contains(string(evs[len(evs)-1].Data), `"reason":"end_turn"`) {
		t.Fatalf("events %v, last %s; want the wait, then the turn finished", got, evs[len(evs)-1].Data)
	}
	for _, e := range evs {
		if e.Type == EventNotice && strings.Contains(string(e.Data), NoticeRateLimited) {
			t.Fatalf("a short wait sent the turn back to the queue: %s", e.Data)
		}
	}
}

// A provider's own 429 asking for longer than is left of the retry
// bound (--retry-for) hands a queued turn back to the queue too, as any
// long wait at the limiter: the wire tells the wait at its gate before
// its retries end, and the worker's turn goes back until then, with
// nothing stored of the refused request — not failed with the 429.
func TestAQueuedTurnWhoseProviderAsksToWaitPastTheRetryBoundGoesBackToTheQueue(t *testing.T) {
	f := newFixture(t)
	limited := providertest.NewLimited(t, providertest.Limits{}, providertest.Step{Text: "done"})
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: limited.URL, MaxRetries: -1,
		Limiter: &ratelimit.Limiter{}, RetryFor: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Agent.Provider, f.srv.Agent.RetryFor = p, 2*time.Minute
	limited.Throttle(3 * time.Minute)
	id := queuedPrompt(t, f, "go")
	before := time.Now()
	err = f.srv.RunQueued(context.Background(), id, QueuedTurn{Turn: "turn_1"})
	var rl *RateLimitedError
	if !errors.As(err, &rl) || !errors.Is(err, agent.ErrHandedOver) {
		t.Fatalf("RunQueued = %v; want a *RateLimitedError wrapping agent.ErrHandedOver (the 429 asked for 3m, past the 2m bound)", err)
	}
	if rl.Until.Before(before.Add(3*time.Minute - time.Second)) {
		t.Errorf("RateLimitedError.Until = %v; want the 429's wait, 3 minutes after it", rl.Until)
	}
	if msgs, _ := f.store.Messages(context.Background(), id); len(msgs) != 1 {
		t.Fatalf("stored %d messages; want the prompt alone (no cut answer for a turn handed back)", len(msgs))
	}
	if n := len(limited.Log()); n != 1 {
		t.Fatalf("the provider saw %d requests; want the one it refused", n)
	}
}
