package gemini

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/internal/ratewait/ratewaittest"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// With a limiter, a 429's retry-after (the fake's retry-after-ms: 5)
// holds the next request of the key back, streamed and whole, under the
// key of the host, the API key's identity and the model, which holds no
// key.
func TestARetryAfterHoldsTheNextRequestAtTheLimiter(t *testing.T) {
	const key = "AIza-secret-key"
	for _, noStream := range []bool{false, true} {
		t.Run(map[bool]string{false: "streamed", true: "whole"}[noStream], func(t *testing.T) {
			clock := ratewaittest.NewClock(ratewaittest.Start)
			srv, arrivals := ratewaittest.RefuseFirst(t, providertest.NewGemini, clock)
			u, _ := url.Parse(srv.URL)
			req := providertest.SampleRequest()
			ratewaittest.Check(t, clock, ratewaittest.Case{
				New: func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
					p, err := New(Config{APIKey: key, BaseURL: srv.URL, MaxRetries: -1, NoStream: noStream, Limiter: lim})
					if err != nil {
						t.Fatal(err)
					}
					return p
				},
				Arrivals:   arrivals,
				RetryAfter: 5 * time.Millisecond,
				Key:        ratelimit.Key{Endpoint: u.Host, Identity: ratelimit.Identity(key), Model: req.Model},
				Secrets:    []string{key},
				Request:    req,
			})
		})
	}
}

// retryInfo429 is the API's refusal for a spent quota, with the wait it
// asks for in a google.rpc.RetryInfo and no header.
const retryInfo429 = `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"20s"}]}}`

// retryInfoServer answers its first request with retryInfo429 and the
// rest with an answer, noting when, by clock, each arrived.
func retryInfoServer(t *testing.T, clock *ratewaittest.Clock) (*httptest.Server, func() []time.Time) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		at = append(at, clock.Now())
		n := len(at)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, retryInfo429)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, providertest.GeminiStream(providertest.Step{Text: "ok"}, ""))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), at...)
	}
}

// With a limiter, the wait a 429's RetryInfo asks for is waited at the
// limiter before the retry — told as a WaitNotice for attempt 2, no
// RetryNotice — not slept by the retry loop: the retry arrives when the
// wait is over by the limiter's clock, and not before.
func TestARetryInfosWaitIsTheLimitersNotTheRetryLoops(t *testing.T) {
	clock := ratewaittest.NewClock(ratewaittest.Start)
	srv, arrivals := retryInfoServer(t, clock)
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: 2, RetryDelay: time.Millisecond, Limiter: &ratelimit.Limiter{Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	var waits []provider.WaitNotice
	var retries []provider.RetryNotice
	ctx := provider.WithWaitNotice(context.Background(), func(n provider.WaitNotice) { waits = append(waits, n) })
	ctx = provider.WithRetryNotice(ctx, func(n provider.RetryNotice) { retries = append(retries, n) })
	if _, err := p.Complete(ctx, providertest.SampleRequest(), nil); err != nil {
		t.Fatalf("the request, retried after the limiter's wait: %v", err)
	}
	at := arrivals()
	if len(at) != 2 {
		t.Fatalf("the server saw %d requests, want 2 (the 429, then its retry)", len(at))
	}
	want := at[0].Add(20 * time.Second)
	if len(waits) != 1 || waits[0].Attempt != 2 || !waits[0].Until.Equal(want) || !strings.Contains(waits[0].Why, "20s") {
		t.Errorf("the WaitNotices are %+v: want one, for attempt 2, until %v, saying 20s", waits, want)
	}
	if len(retries) != 0 {
		t.Errorf("the retry loop told %+v: the wait was the limiter's, not a backoff", retries)
	}
	if at[1].Before(want) {
		t.Errorf("the retry arrived at %v, before the RetryInfo's wait ended at %v", at[1], want)
	}
}

// RetryFor bounds the retries by the time since the first attempt, not
// by their count: after waits of 1, 2 and 4 s, a fourth failure's wait
// of 8 s would end past 10 s, so the retries end there — four attempts,
// where MaxRetries alone allowed two. A wait the answer asked for that
// ends past the bound ends them at once.
func TestRetryForBoundsTheRetriesByTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limiter bool
		status  int
		body    string
		sends   int
	}{
		{name: "backoffs", status: http.StatusServiceUnavailable, sends: 4},
		{name: "a RetryInfo past the bound, with a limiter", limiter: true, status: http.StatusTooManyRequests, body: retryInfo429, sends: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := ratewaittest.NewClock(ratewaittest.Start)
			policy := &retryPolicy{attempts: 2, retryFor: 10 * time.Second, statuses: retried, initial: 1,
				now: clock.Now, sleep: func(_ context.Context, d time.Duration) error { clock.After(d); return nil }}
			var g = ratewaitGate(tc.limiter, clock)
			req, _ := http.NewRequest(http.MethodPost, "http://gemini.invalid/", strings.NewReader("the body"))
			sends := 0
			resp, err := policy.do(req, g, func(*http.Request) (*http.Response, error) {
				sends++
				return &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tc.body))}, nil
			})
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("the last answer: %v %v, want its %d", resp, err, tc.status)
			}
			if sends != tc.sends {
				t.Errorf("%d attempts, want %d", sends, tc.sends)
			}
		})
	}
}

// With a limiter and RetryFor, a RetryInfo's wait past the bound goes to
// the gate as any asked-for wait does: it is told (so that a worker's
// observer hands the turn back to the queue) and only then given up, the
// 429 ending the retries; an observer that cancels the context inside
// the notice has its context's error. Nothing is sent again either way.
func TestAWaitPastRetryForIsToldAtTheGateBeforeTheRetriesEnd(t *testing.T) {
	for _, handOver := range []bool{false, true} {
		t.Run(map[bool]string{false: "the 429 ends them", true: "an observer hands it over"}[handOver], func(t *testing.T) {
			clock := ratewaittest.NewClock(ratewaittest.Start)
			policy := &retryPolicy{attempts: 2, retryFor: 10 * time.Second, statuses: retried, initial: 1,
				now: clock.Now, sleep: func(_ context.Context, d time.Duration) error { clock.After(d); return nil }}
			g := ratewaitGate(true, clock)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var told []provider.WaitNotice
			ctx = provider.WithWaitNotice(ctx, func(n provider.WaitNotice) {
				told = append(told, n)
				if handOver {
					cancel()
				}
			})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://gemini.invalid/", strings.NewReader("the body"))
			sends := 0
			resp, err := policy.do(req, g, func(*http.Request) (*http.Response, error) {
				sends++
				return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(retryInfo429))}, nil
			})
			want := ratewaittest.Start.Add(20 * time.Second)
			if len(told) != 1 || told[0].Attempt != 2 || !told[0].Until.Equal(want) {
				t.Errorf("told %+v, want one wait of attempt 2 until %v", told, want)
			}
			if sends != 1 {
				t.Errorf("%d attempts, want only the first", sends)
			}
			if handOver {
				if !errors.Is(err, context.Canceled) || resp != nil {
					t.Errorf("the call ended with %v %v, want the context's error", resp, err)
				}
				return
			}
			if err != nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("the call ended with %v %v, want the 429", resp, err)
			}
			if b, _ := io.ReadAll(resp.Body); string(b) != retryInfo429 {
				t.Errorf("the 429's body reads %q, want it whole", b)
			}
		})
	}
}

// New sets the bound: RetryFor retries by time even where MaxRetries
// says none.
func TestNewBoundsTheRetriesByRetryFor(t *testing.T) {
	p, err := New(Config{APIKey: "k", BaseURL: "http://gemini.invalid", MaxRetries: -1, RetryFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if p.ep.retry == nil || p.ep.retry.retryFor != time.Minute {
		t.Errorf("the retry policy is %+v, want one bounded by a minute", p.ep.retry)
	}
}

// ratewaitGate is a gate at a limiter on clock, or nil without one.
func ratewaitGate(on bool, clock *ratewaittest.Clock) *ratewait.Gate {
	if !on {
		return nil
	}
	return ratewait.New(&ratelimit.Limiter{Clock: clock}, "gemini", ratelimit.Identity("k"))
}

// An attempt that never connected (a refused connection) is told to the
// limiter as unreached: its retry goes at its own backoff, not held at
// the gate until the limiter's probe "waiting for an answer to a request
// already sent".
func TestARetryOfAnAttemptThatNeverConnectedIsNotHeldAtTheLimiter(t *testing.T) {
	clock := ratewaittest.NewClock(ratewaittest.Start)
	policy := &retryPolicy{attempts: 3, statuses: retried, initial: 1,
		sleep: func(context.Context, time.Duration) error { return nil }}
	var notices []provider.WaitNotice
	ctx := provider.WithWaitNotice(context.Background(), func(n provider.WaitNotice) { notices = append(notices, n) })
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://gemini.invalid/", strings.NewReader("the body"))
	sends := 0
	_, err := policy.do(req, ratewaitGate(true, clock), func(*http.Request) (*http.Response, error) {
		sends++
		return nil, &url.Error{Op: "Post", URL: "http://gemini.invalid/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	})
	var ce *provider.ConnectionError
	if !errors.As(err, &ce) || sends != 3 {
		t.Fatalf("%d sends, err %v: want 3, ending in a *provider.ConnectionError", sends, err)
	}
	if len(notices) > 0 {
		t.Errorf("the retries were held at the limiter: %+v", notices)
	}
}
