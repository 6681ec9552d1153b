package anthropic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// A stream that ends cleanly before its message_stop is a cut
// (provider.ErrStreamCut): transient, so the agent may send it again.
func TestAStreamEndedCleanlyBeforeMessageStopIsACut(t *testing.T) {
	full := providertest.AnthropicStream(providertest.Step{Text: "hi"})
	for name, raw := range map[string]string{
		"after message_start":     full[:strings.Index(full, "event: content_block_start")],
		"after the message_delta": full[:strings.Index(full, "event: message_stop")],
	} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewAnthropic(t, providertest.Step{Raw: raw})
			_, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
			if !errors.Is(err, provider.ErrStreamCut) {
				t.Fatalf("err = %v: does not wrap provider.ErrStreamCut", err)
			}
			if !provider.Transient(err) {
				t.Fatalf("err = %v: not transient", err)
			}
			if !strings.Contains(err.Error(), "anthropic: ") || !strings.Contains(err.Error(), "(no message_stop)") {
				t.Fatalf("err = %q: does not name the wire and the missing event", err)
			}
		})
	}
}

// A whole answer (NoStream) sent through anthropic-sdk-go is not retried
// by the SDK when RetryFor is set: the agent's resend within RetryFor is
// the one retry policy. With RetryFor 0 the SDK retries as before.
func TestAWholeAnswerIsNotRetriedByTheSDKWhenRetryForIsSet(t *testing.T) {
	for _, tc := range []struct {
		retryFor time.Duration
		requests int
	}{{retryFor: time.Minute, requests: 1}, {retryFor: 0, requests: 3}} {
		for _, status := range []int{529, 500} {
			srv := providertest.NewAnthropic(t, providertest.Step{Status: status}, providertest.Step{Status: status}, providertest.Step{Text: "ok"})
			p, err := New(Config{APIKey: "test-key", BaseURL: srv.URL, NoStream: true, MaxRetries: 3, RetryFor: tc.retryFor})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
			if n := len(srv.Requests()); n != tc.requests {
				t.Fatalf("RetryFor %v, %d: the fake saw %d requests, want %d (err %v)", tc.retryFor, status, n, tc.requests, err)
			}
			if tc.retryFor > 0 && (err == nil || !provider.Transient(err)) {
				t.Fatalf("RetryFor %v, %d: err = %v, want a transient error for the agent to resend", tc.retryFor, status, err)
			}
			if tc.retryFor == 0 && err != nil {
				t.Fatalf("RetryFor 0, %d: err = %v after the SDK's retries", status, err)
			}
		}
	}
}

// An answer whose HTTP/2 stream the server resets after message_start,
// before any output, comes back from the wire as a stream that broke off:
// transient, so the agent sends it again, and said so in words.
func TestAStreamResetOverHTTP2BeforeAnyOutputIsTransient(t *testing.T) {
	full := providertest.AnthropicStream(providertest.Step{Text: "hi"})
	head := full[:strings.Index(full, "event: content_block_start")]
	srv := providertest.ResetOverHTTP2(t, "text/event-stream", head)
	p, err := New(Config{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: -1, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
	providertest.WantBrokeOff(t, err)
}
