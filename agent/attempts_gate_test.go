package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
)

// gatedWire fails as internal/send's and gemini's senders do with a rate
// limiter: a 503 retried after a backoff (told as a RetryNotice), then a
// 429 whose retry-after the limiter holds (told only as a WaitNotice for
// the next attempt), then a 503 that ends the wire's retries as a
// RetriesEnded, which carries no count of attempts.
type gatedWire struct{ sends int }

func (w *gatedWire) Complete(ctx context.Context, _ provider.Request, _ func(string)) (provider.Response, error) {
	w.sends++
	before := provider.AttemptsBefore(ctx)
	provider.NoticeRetry(ctx, provider.RetryNotice{Attempt: before + 2, For: 3 * time.Second, Wait: 10 * time.Millisecond, Status: 503})
	provider.NoticeWait(ctx, provider.WaitNotice{Attempt: before + 3, Until: time.Now(), Why: "429: retry after 10ms"})
	return provider.Response{}, provider.StatusError("anthropic", 503, "m", &provider.RetriesEnded{Err: errors.New("503 overloaded"), Retryable: true})
}

// An attempt told only as a wait at the rate limiter counts as the
// others: each send of gatedWire makes 3 attempts, so the turn's first
// resend is attempt 4, its second 7, and the error counts 9 (the review
// found the limiter's attempts missed: 2 3 4 5 6 and "6 attempts").
func TestAttemptsWaitedAtTheLimiterAreCountedWithTheOthers(t *testing.T) {
	w := &gatedWire{}
	var waits []time.Duration
	r := failingRig(t, w, 3*time.Second, &waits)
	_, events, err := r.attempt("hi")
	var numbers []string
	for _, text := range of(events, Retry) {
		_, rest, _ := strings.Cut(text, "(attempt ")
		n, _, _ := strings.Cut(rest, ",")
		numbers = append(numbers, n)
	}
	must(t, fmt.Sprintf("err %v, %d sends, retries %q", err, w.sends, of(events, Retry)),
		want{w.sends == 3, "3 sends"},
		want{strings.Join(numbers, " ") == "2 4 5 7 8", "Retry events numbering 2 4 5 7 8 (attempts 3, 6, 9 waited at the limiter)"},
		want{err != nil && strings.Contains(err.Error(), "9 attempts over"), "the turn's error counting 9 attempts"})
}
