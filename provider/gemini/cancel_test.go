package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A context cancelled while an attempt is under way, whose answer would be
// retried, ends the call with the context's error at once — not with that
// answer — as a cancel during the backoff does: the order of the cancel
// and the answer does not change what the caller gets (it did, and made
// TestAContextCancelledDuringTheBackoffEndsTheRetriesWithItsError fail now
// and then).
func TestAContextCancelledDuringAnAttemptEndsTheRetriesWithItsError(t *testing.T) {
	policy := &retryPolicy{attempts: 5, statuses: retried, initial: 3600}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://gemini.invalid/", strings.NewReader("the body"))
	sends := 0
	closed := false
	resp, err := policy.do(req, nil, func(r *http.Request) (*http.Response, error) {
		sends++
		cancel() // before the answer is looked at
		return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"1"}},
			Body: closeNoter{Reader: strings.NewReader(`not json`), closed: &closed}}, nil
	})
	if !errors.Is(err, context.Canceled) || resp != nil || sends != 1 {
		t.Fatalf("resp %v, err %v, %d sends; want the context's error, no answer, one send", resp, err, sends)
	}
	if !closed {
		t.Fatal("the answer dropped was not closed")
	}
}

// closeNoter is a body that notes its Close.
type closeNoter struct {
	io.Reader
	closed *bool
}

func (c closeNoter) Close() error { *c.closed = true; return nil }
