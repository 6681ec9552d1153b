package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// waitsFirst is a provider that reports a wait at its rate limiter, as a
// wire with a limiter does, before sending the request on.
type waitsFirst struct {
	provider.Provider
	notice provider.WaitNotice
}

func (w waitsFirst) WireName() string { return provider.WireName(w.Provider) }

func (w waitsFirst) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	provider.NoticeWait(ctx, w.notice)
	return w.Provider.Complete(ctx, req, onText)
}

func TestAWaitAtTheRateLimiterIsAWaitingEventSayingUntilWhenAndWhy(t *testing.T) {
	r := newRig(t)
	until := time.Now().Add(20 * time.Second)
	r.agent.Provider = waitsFirst{Provider: r.agent.Provider, notice: provider.WaitNotice{
		Attempt: 1, Until: until, Why: "429 from api.anthropic.com: retry after 20s", URL: "https://api.anthropic.com/v1/messages"}}
	r.srv.Push(providertest.Step{Text: "done"})
	_, events := r.turn("go")
	var waits []Event
	for _, e := range events {
		if e.Kind == Waiting {
			waits = append(waits, e)
		}
	}
	if len(waits) != 1 {
		t.Fatalf("Waiting events = %d (%+v), want 1", len(waits), waits)
	}
	w := waits[0]
	if !w.Until.Equal(until) {
		t.Errorf("Until = %v, want %v", w.Until, until)
	}
	for _, want := range []string{"waiting until " + until.UTC().Format("15:04:05") + " UTC", "rate limit of anthropic", "429 from api.anthropic.com: retry after 20s"} {
		if !strings.Contains(w.Text, want) {
			t.Errorf("Text = %q, want it to hold %q", w.Text, want)
		}
	}
}

func TestWaitTextSaysHowLongIsLeftAndNeverANegativeWait(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		wire string
		n    provider.WaitNotice
		want string
	}{
		{"ahead", "openai", provider.WaitNotice{Until: now.Add(1500 * time.Millisecond), Why: "requests: 0 of 50 left until 12:00:01 UTC"},
			"waiting until 12:00:01 UTC (1.5s) for the rate limit of openai: requests: 0 of 50 left until 12:00:01 UTC"},
		{"past", "", provider.WaitNotice{Until: now.Add(-time.Second)},
			"waiting until 11:59:59 UTC (0s) for the rate limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := WaitText(c.wire, c.n, now); got != c.want {
				t.Errorf("WaitText = %q, want %q", got, c.want)
			}
		})
	}
}

// deadlineSeen is a provider that records the retry bound the context
// of each request leaves a wire whose own bound is an hour.
type deadlineSeen struct {
	provider.Provider
	bounds *[]time.Duration
}

func (d deadlineSeen) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	*d.bounds = append(*d.bounds, provider.RetryBound(ctx, time.Hour, time.Now()))
	return d.Provider.Complete(ctx, req, onText)
}

// The wire's retries bounded by time end within the agent's RetryFor:
// each request's context carries the agent's retry deadline, so that
// the wire's retries and the agent's resends together take at most
// RetryFor, not RetryFor each.
func TestTheWiresRetriesEndWithinTheAgentsRetryFor(t *testing.T) {
	r := newRig(t)
	var bounds []time.Duration
	r.agent.Provider = deadlineSeen{Provider: r.agent.Provider, bounds: &bounds}
	r.agent.RetryFor = time.Minute
	r.srv.Push(providertest.Step{Text: "done"})
	r.turn("go")
	if len(bounds) != 1 || bounds[0] > time.Minute || bounds[0] < 50*time.Second {
		t.Fatalf("the wire's retry bound was %v, want about the agent's RetryFor (1m), not its own hour", bounds)
	}
}
