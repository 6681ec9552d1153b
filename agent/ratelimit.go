package agent

import (
	"sync/atomic"
	"time"

	"github.com/myelin-run/myelin/provider"
)

// This file is what a turn tells of its requests' waits at their key's
// rate limiter (issue 32, docs/ratelimits.md): each wait a wire reports
// (provider.WaitNotice) is a Waiting event with Until set, in words that
// say until when and why.

// WaitText is the words of a Waiting event for a rate limit: "waiting
// until 12:00:05 UTC (20.0s) for the rate limit of anthropic: 429 from
// api.anthropic.com: retry after 20s". wire is the wire's name
// (provider.WireName), "" when it says none; now is when it is said.
func WaitText(wire string, n provider.WaitNotice, now time.Time) string {
	what := "the rate limit"
	if wire != "" {
		what += " of " + wire
	}
	s := "waiting until " + n.Until.UTC().Format("15:04:05") + " UTC (" + wait(max(0, n.Until.Sub(now))) + ") for " + what
	if n.Why != "" {
		s += ": " + n.Why
	}
	return s
}

// waitNotice is the observer of a turn's requests' waits at the rate
// limiter (provider.WithWaitNotice): each is a Waiting event, its
// attempt kept in newest as retryNotice keeps a retry's.
func (a *Agent) waitNotice(on func(Event), newest *atomic.Int32) func(provider.WaitNotice) {
	wire := provider.WireName(a.Provider)
	return func(n provider.WaitNotice) {
		noticed(newest, n.Attempt)
		on(Event{Kind: Waiting, Text: WaitText(wire, n, time.Now()), Until: n.Until})
	}
}
