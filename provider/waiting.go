package provider

import (
	"context"
	"time"
)

// This file tells that a request is held back before it is sent, at its
// key's rate limiter (issue 32, ratelimit.Limiter): WaitNotice, heard
// through WithWaitNotice. A retry's own wait is told by RetryNotice; a
// WaitNotice is the limiter's, before any attempt, the first included.

// WaitNotice says that an attempt of a request waits for its key's rate
// limit before it is sent: until when the sender expects to wait, and why
// (ratelimit.Observation.Why's words: "429 from api.anthropic.com: retry
// after 20s", "requests: 0 of 50 left until 12:00:05 UTC"). It is told
// before the wait starts and again whenever Until moves later; never when
// the attempt need not wait.
type WaitNotice struct {
	// Attempt is the attempt that waits (1 for the first).
	Attempt int
	// Until is when the wait is expected to end.
	Until time.Time
	// Why says what the wait comes from, in words; it holds no key.
	Why string
	// URL is where the request goes, as Redact writes it.
	URL string
}

// waitKey is the context key of the observer WithWaitNotice sets.
type waitKey struct{}

// WithWaitNotice is ctx with observe called, by the wire sending in it,
// before each wait at a rate limiter. observe runs on the sending
// goroutine: it must return quickly and must not send through the same
// provider.
func WithWaitNotice(ctx context.Context, observe func(WaitNotice)) context.Context {
	return context.WithValue(ctx, waitKey{}, observe)
}

// NoticeWait tells ctx's observer, if there is one, of n; without an
// observer it costs one context lookup.
func NoticeWait(ctx context.Context, n WaitNotice) {
	if observe, ok := ctx.Value(waitKey{}).(func(WaitNotice)); ok && observe != nil {
		observe(n)
	}
}
