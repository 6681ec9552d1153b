package responses

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// created is a stream's first event, which shows nothing.
const created = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[],\"error\":null}}\n\n"

// A stream that ends cleanly before its response.completed is a cut
// (provider.ErrStreamCut): transient, so the agent may send it again.
func TestAStreamEndedCleanlyBeforeResponseCompletedIsACut(t *testing.T) {
	full := providertest.ResponsesStream(providertest.Step{Text: "hi"}, false)
	for name, raw := range map[string]string{
		"after response.created":      created,
		"[DONE] with no completed":    created + "data: [DONE]\n\n",
		"after the output item, done": full[:strings.Index(full, "event: response.completed")],
	} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewResponses(t, providertest.Step{Raw: raw})
			_, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
			if !errors.Is(err, provider.ErrStreamCut) {
				t.Fatalf("err = %v: does not wrap provider.ErrStreamCut", err)
			}
			if !provider.Transient(err) {
				t.Fatalf("err = %v: not transient", err)
			}
			if !strings.HasPrefix(err.Error(), "openai-responses: ") || !strings.Contains(err.Error(), "(no response.completed)") {
				t.Fatalf("err = %q: does not name the wire and what was missing", err)
			}
		})
	}
}

// The error object of an error event or a failed response — streamed, or
// a whole answer of 200 whose status is "failed" — is kept beneath the
// wire's error, whose text is as before: provider.Transient reads it, so
// that a server fault or a rate limit is resent and a refusal is not.
func TestAnErrorEventOrAFailedResponseIsTransientForAServerFaultOrARateLimitOnly(t *testing.T) {
	failedWith := func(obj string) string {
		return `{"type":"response.failed","sequence_number":1,"response":{"id":"r","status":"failed","output":[],"error":` + obj + `}}`
	}
	wholeFailed := func(obj string) string {
		return `{"id":"r","object":"response","status":"failed","output":[],"error":` + obj + `}`
	}
	const (
		serverError = `{"code":"server_error","message":"An error occurred while processing your request."}`
		rateLimit   = `{"code":"rate_limit_exceeded","message":"Rate limit reached."}`
		invalid     = `{"code":"invalid_prompt","message":"Invalid prompt: flagged."}`
	)
	for name, tc := range map[string]struct {
		raw       string // an event's data, or with noStream the whole body
		noStream  bool
		want      string // the error's text
		transient bool
	}{
		"an error event, server_error": {
			raw:  `{"type":"error","code":"server_error","message":"The server had an error.","param":null,"sequence_number":1}`,
			want: `openai-responses: the response failed: {"type":"error","code":"server_error","message":"The server had an error.","param":null,"sequence_number":1}`, transient: true,
		},
		"an error event, rate_limit_exceeded": {
			raw:  `{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":1}`,
			want: `openai-responses: the response failed: {"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":1}`, transient: true,
		},
		"an error event, invalid_request_error": {
			raw:  `{"type":"error","code":"invalid_request_error","message":"Invalid 'input[3]'.","param":"input","sequence_number":1}`,
			want: `openai-responses: the response failed: {"type":"error","code":"invalid_request_error","message":"Invalid 'input[3]'.","param":"input","sequence_number":1}`,
		},
		"an event with an error object, server_error": {
			raw:  `{"type":"error","sequence_number":1,"error":{"type":"server_error","code":"server_error","message":"Overloaded."}}`,
			want: `openai-responses: the stream ended with an error: {"type":"server_error","code":"server_error","message":"Overloaded."}`, transient: true,
		},
		"an event with an error object, invalid_request_error": {
			raw:  `{"type":"error","sequence_number":1,"error":{"type":"invalid_request_error","code":"invalid_value","message":"Invalid value."}}`,
			want: `openai-responses: the stream ended with an error: {"type":"invalid_request_error","code":"invalid_value","message":"Invalid value."}`,
		},
		"response.failed, server_error":        {raw: failedWith(serverError), want: "openai-responses: the response failed: " + serverError, transient: true},
		"response.failed, rate_limit_exceeded": {raw: failedWith(rateLimit), want: "openai-responses: the response failed: " + rateLimit, transient: true},
		"response.failed, invalid_prompt":      {raw: failedWith(invalid), want: "openai-responses: the response failed: " + invalid},
		"a whole failed answer, server_error":  {raw: wholeFailed(serverError), noStream: true, want: "openai-responses: the response failed: " + serverError, transient: true},
		"a whole failed answer, invalid_prompt": {
			raw: wholeFailed(invalid), noStream: true, want: "openai-responses: the response failed: " + invalid,
		},
	} {
		t.Run(name, func(t *testing.T) {
			raw := tc.raw
			if !tc.noStream {
				raw = created + "data: " + tc.raw + "\n\n"
			}
			srv := providertest.NewResponses(t, providertest.Step{Raw: raw})
			_, err := newProvider(t, srv, Config{NoStream: tc.noStream}).Complete(context.Background(), sampleRequest(), nil)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want the text %q", err, tc.want)
			}
			if got := provider.Transient(err); got != tc.transient {
				t.Fatalf("Transient(%v) = %v, want %v", err, got, tc.transient)
			}
		})
	}
}

// A whole answer (NoStream) is not retried by the wire when RetryFor is
// set, as when openai-go sent it: the agent's resend within RetryFor is
// the one retry policy. With RetryFor 0 the wire retries by MaxRetries.
func TestAWholeAnswerIsNotRetriedByTheWireWhenRetryForIsSet(t *testing.T) {
	for _, tc := range []struct {
		retryFor time.Duration
		requests int
	}{{retryFor: time.Minute, requests: 1}, {retryFor: 0, requests: 3}} {
		for _, status := range []int{529, 500} {
			srv := providertest.NewResponses(t, providertest.Step{Status: status}, providertest.Step{Status: status}, providertest.Step{Text: "ok"})
			_, err := newProvider(t, srv, Config{NoStream: true, RetryFor: tc.retryFor}).Complete(context.Background(), sampleRequest(), nil)
			if n := len(srv.Requests()); n != tc.requests {
				t.Fatalf("RetryFor %v, %d: the fake saw %d requests, want %d (err %v)", tc.retryFor, status, n, tc.requests, err)
			}
			if tc.retryFor > 0 && (err == nil || !provider.Transient(err)) {
				t.Fatalf("RetryFor %v, %d: err = %v, want a transient error for the agent to resend", tc.retryFor, status, err)
			}
			if tc.retryFor == 0 && err != nil {
				t.Fatalf("RetryFor 0, %d: err = %v after the wire's retries", status, err)
			}
		}
	}
}

// An answer whose HTTP/2 stream the server resets after response.created
// comes back from the wire as a stream that broke off: transient, so the
// agent sends it again.
func TestAStreamResetOverHTTP2BeforeAnyOutputIsTransient(t *testing.T) {
	srv := providertest.ResetOverHTTP2(t, "text/event-stream", created)
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), sampleRequest(), nil)
	providertest.WantBrokeOff(t, err)
}

// A whole answer's refusal says why the wire's retries ended
// (provider.RetriesEnded), as a streamed one's does: the retry-after the
// answer asked for, for the agent to wait, which the SDK's error did not
// carry.
func TestAWholeAnswersRefusalSaysWhyTheRetriesEnded(t *testing.T) {
	providertest.CheckAWholeAnswersRefusalSaysWhyTheRetriesEnded(t, "openai-responses", sampleRequest(), func(baseURL string, retryFor time.Duration) (provider.Provider, error) {
		return New(Config{APIKey: "k", BaseURL: baseURL, NoStream: true, MaxRetries: -1, RetryFor: retryFor})
	})
}
