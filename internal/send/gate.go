package send

import (
	"context"

	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/ratelimit"
)

// This file is the Sender's optional rate-limit gate (issue 32 point 2,
// docs/ratelimits.md "The sender's gate"): with one, every attempt of a
// request — the first and each retry — waits at the limiter before it is
// sent, and every answer, whatever its status, is observed by it with
// the attempt's ticket (PostWritten holds the two together). The gate is
// internal/ratewait's, the one every wire's requests pass; without one
// nothing of it runs and the Sender sends as the SDK would.

// WithLimiter is a Sender like s whose every attempt waits at l before it
// is sent and whose every answer l observes (nil l: a Sender like s
// without a gate). wire is the wire's name (provider.WireName's, which
// ratelimit.FromResponse reads by), identity ratelimit.Identity of the
// API key the Sender's requests carry ("" for a platform's credentials,
// named by the caller some other way) — never the key itself. The key a
// request waits under is the Target's URL host, identity, and the model
// the request's context names (ratelimit.WithModel; "" when it names
// none).
//
// A retry-after is then waited at the limiter, which holds it, not slept
// by the Sender as well; a backoff is the Sender's own (Rules). A wait
// at the limiter is told to the context's observer
// (provider.WithWaitNotice); its end by the context is the call's error,
// wrapping the context's.
func (s *Sender) WithLimiter(l *ratelimit.Limiter, wire, identity string) *Sender {
	c := *s
	c.gate = ratewait.New(l, wire, identity)
	return &c
}

// limitKey is the key the requests of s sent in ctx wait under.
func (s *Sender) limitKey(ctx context.Context) ratelimit.Key {
	return s.gate.Key(ctx, s.target.URL)
}
