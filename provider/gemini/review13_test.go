package gemini

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestAContextCancelledDuringTheBackoffEndsTheRetriesWithItsError(t *testing.T) {
	policy := &retryPolicy{attempts: 5, statuses: retried, initial: 3600} // an hour: only the cancel ends the wait
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://gemini.invalid/", strings.NewReader("the body"))
	sent := make(chan struct{})
	go func() {
		<-sent
		cancel()
	}()
	sends := 0
	resp, err := policy.do(req, nil, func(r *http.Request) (*http.Response, error) {
		sends++
		close(sent)
		return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"1"}},
			Body: io.NopCloser(strings.NewReader(`not json`))}, nil
	})
	if !errors.Is(err, context.Canceled) || resp != nil || sends != 1 {
		t.Fatalf("resp %v, err %v, %d sends", resp, err, sends)
	}
}

func TestATextPartWithASurrogatePairInUTF8FormIsTheCharacterItEncodes(t *testing.T) {
	cesu := "\xed\xa0\xbd\xed\xb8\x80" // U+1F600 as CESU-8
	var c chunk
	if err := decodeChunk([]byte(`{"candidates":[{"content":{"parts":[{"text":"a`+cesu+`b"}]},"finishReason":"STOP"}]}`), &c); err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	a := accumulator{onText: func(s string) { streamed.WriteString(s) }}
	if err := a.add(&c); err != nil {
		t.Fatal(err)
	}
	if got := a.response().Message.Parts[0].Text; got != "a😀b" || streamed.String() != "a😀b" {
		t.Fatalf("text %q, streamed %q, want %q", got, streamed.String(), "a😀b")
	}
}

// A send of a request some attempts of which were made before it (the
// agent's resend, provider.WithAttemptsBefore) numbers its attempts after
// them, in its notices and its error.
func TestASendAfterEarlierAttemptsNumbersItsAttemptsAfterThem(t *testing.T) {
	policy := &retryPolicy{attempts: 3, statuses: retried, initial: 1,
		sleep: func(context.Context, time.Duration) error { return nil }}
	var notices []provider.RetryNotice
	ctx := provider.WithRetryNotice(context.Background(), func(n provider.RetryNotice) { notices = append(notices, n) })
	req, _ := http.NewRequestWithContext(provider.WithAttemptsBefore(ctx, 20), http.MethodPost, "http://gemini.invalid/", strings.NewReader("the body"))
	_, err := policy.do(req, nil, func(*http.Request) (*http.Response, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})
	providertest.CheckAttemptsAfter(t, 20, 2, notices, err)
}
