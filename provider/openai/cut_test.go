package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// roleOnly is a first chunk that shows nothing: the assistant's role.
const roleOnly = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"

// A stream that ends cleanly before a finish_reason is a cut
// (provider.ErrStreamCut): transient, so the agent may send it again.
func TestAStreamEndedCleanlyBeforeItsFinishReasonIsACut(t *testing.T) {
	for name, raw := range map[string]string{
		"closed after a chunk":        roleOnly,
		"[DONE] with no finish":       roleOnly + "data: [DONE]\n\n",
		"text, then closed, no usage": roleOnly + `data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewOpenAI(t, providertest.Step{Raw: raw})
			_, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
			if !errors.Is(err, provider.ErrStreamCut) {
				t.Fatalf("err = %v: does not wrap provider.ErrStreamCut", err)
			}
			if !provider.Transient(err) {
				t.Fatalf("err = %v: not transient", err)
			}
			if !strings.HasPrefix(err.Error(), "openai: ") || !strings.Contains(err.Error(), "(no finish_reason)") {
				t.Fatalf("err = %q: does not name the wire and what was missing", err)
			}
		})
	}
}

// An error object in the stream keeps its JSON (ErrorObject) beneath the
// wire's error, whose text is as before: provider.Transient reads it, so
// that a server fault or a rate limit is resent and a refusal is not.
func TestAnErrorObjectInTheStreamIsTransientForAServerFaultOrARateLimitOnly(t *testing.T) {
	for name, tc := range map[string]struct {
		obj       string
		transient bool
	}{
		"server_error":        {obj: `{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}`, transient: true},
		"overloaded":          {obj: `{"message":"The engine is currently overloaded, please try again later","type":"server_error"}`, transient: true},
		"rate_limit_exceeded": {obj: `{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}`, transient: true},
		"insufficient_quota":  {obj: `{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}`},
		"invalid_request":     {obj: `{"message":"Invalid value for 'tool_choice'","type":"invalid_request_error","param":"tool_choice","code":"invalid_value"}`},
		"an unknown error":    {obj: `{"message":"something else"}`},
		"vLLM's, at the top":  {obj: ""},
	} {
		t.Run(name, func(t *testing.T) {
			raw := roleOnly + `data: {"error":` + tc.obj + "}\n\n"
			want := "openai: the stream ended with an error: " + tc.obj
			if tc.obj == "" {
				top := `{"object":"error","message":"[{'type': 'missing', 'loc': ('body', 'model')}]","type":"BadRequestError","param":null,"code":400}`
				raw, want = "data: "+top+"\n\n", "openai: the stream ended with an error: "+top
			}
			srv := providertest.NewOpenAI(t, providertest.Step{Raw: raw})
			_, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v, want the text %q", err, want)
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
			srv := providertest.NewOpenAI(t, providertest.Step{Status: status}, providertest.Step{Status: status}, providertest.Step{Text: "ok"})
			p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: true, MaxRetries: 3, RetryFor: tc.retryFor})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(context.Background(), sampleRequest(), nil)
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

// An answer whose HTTP/2 stream the server resets after a chunk that
// shows nothing comes back from the wire as a stream that broke off:
// transient, so the agent sends it again.
func TestAStreamResetOverHTTP2BeforeAnyOutputIsTransient(t *testing.T) {
	srv := providertest.ResetOverHTTP2(t, "text/event-stream", roleOnly)
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
	providertest.CheckAWholeAnswersRefusalSaysWhyTheRetriesEnded(t, "openai", sampleRequest(), func(baseURL string, retryFor time.Duration) (provider.Provider, error) {
		return New(Config{APIKey: "k", BaseURL: baseURL, NoStream: true, MaxRetries: -1, RetryFor: retryFor})
	})
}

// A whole answer's retries are told to the context's observer
// (provider.WithRetryNotice), as a streamed answer's are: the SDK retried
// it unheard.
func TestAWholeAnswersRetriesAreTold(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Stainless-Retry-Count") == "0" {
			w.Header().Set("retry-after-ms", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: true, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	var told []provider.RetryNotice
	ctx := provider.WithRetryNotice(context.Background(), func(n provider.RetryNotice) { told = append(told, n) })
	resp, err := p.Complete(ctx, sampleRequest(), nil)
	if err != nil || resp.Message.Text() != "ok" {
		t.Fatalf("%+v, %v", resp, err)
	}
	if len(told) != 1 || told[0].Attempt != 2 || told[0].Attempts != 3 || told[0].Status != http.StatusServiceUnavailable {
		t.Fatalf("told %+v, want one notice of attempt 2 of 3 after a 503", told)
	}
}
