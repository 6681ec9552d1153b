package send

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// timed is a Sender to srv with rules whose clock is a test's: each wait
// moves it on by the wait, and is recorded in waits, without waiting.
func timed(t *testing.T, url string, rules Rules, waits *[]time.Duration) (*Sender, *time.Time) {
	t.Helper()
	now := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSender(t, url, rules, waits)
	s.now = func() time.Time { return now }
	s.sleep = func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		now = now.Add(d)
		return ctx.Err()
	}
	return s, &now
}

// Bounded by time (Rules.For), the retries go on while the time since the
// first attempt with the next wait is within it, whatever MaxRetries
// says; each retry is told with no count, and for how long they may go
// on. A retry-after longer than what is left ends them with the answer
// that asked, saying so; openai-go's limit on a retry-after keeps its
// meaning; what is never retried stays so.
func TestRetriesBoundedByTime(t *testing.T) {
	ok := answer{status: 200, body: "data: ok\n\n"}
	later := func(status int, after string) answer {
		return answer{status: status, header: map[string]string{"retry-after": after}, body: "later"}
	}
	for name, c := range map[string]struct {
		rules   Rules
		answers []answer
		waits   []time.Duration
		status  int // of the answer returned; 0: an error
		// the error's RetriesEnded, when it is one
		ended *provider.RetriesEnded
	}{
		"a retry-after of 0 is waited as a backoff, not at once": {
			Rules{For: 10 * time.Second}, []answer{later(529, "0")},
			[]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}, 0,
			&provider.RetriesEnded{Retryable: true},
		},
		"a retry-after date already past is waited as a backoff": {
			Rules{For: 10 * time.Second}, []answer{later(503, "Sat, 01 Jan 1999 00:00:00 GMT")},
			[]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}, 0,
			&provider.RetriesEnded{Retryable: true},
		},
		"the context's retry deadline cuts For short": {
			Rules{For: 10 * time.Second}, []answer{{status: 503, body: "down"}},
			[]time.Duration{500 * time.Millisecond, time.Second}, 0,
			&provider.RetriesEnded{Retryable: true},
		},
		"backoffs while within For, past MaxRetries": {
			// 0.5+1+2+4 = 7.5 s; the next 8 s would end at 15.5 s
			Rules{MaxRetries: 1, For: 10 * time.Second}, []answer{{status: 503, body: "down"}},
			[]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}, 0,
			&provider.RetriesEnded{Retryable: true},
		},
		"an answer within For ends them": {
			Rules{For: time.Minute}, []answer{{status: 529}, {status: 500}, ok},
			[]time.Duration{500 * time.Millisecond, time.Second}, 200, nil,
		},
		"a retry-after past what is left ends them": {
			Rules{For: 10 * time.Second}, []answer{later(429, "5"), later(429, "6")},
			[]time.Duration{5 * time.Second}, 0,
			&provider.RetriesEnded{Retryable: true, RetryAfter: 6 * time.Second, TooLong: true, Room: 5 * time.Second},
		},
		"a retry-after of all that is left is waited": {
			Rules{For: 10 * time.Second}, []answer{later(429, "4"), later(429, "6"), ok},
			[]time.Duration{4 * time.Second, 6 * time.Second}, 200, nil,
		},
		"openai-go's limit on a retry-after holds within For": {
			func() Rules { r := OpenAI(2); r.For = 10 * time.Minute; return r }(), []answer{later(429, "121")},
			nil, 0,
			&provider.RetriesEnded{Retryable: true, TooLong: true, Room: 2 * time.Minute},
		},
		"bounded by count, the last answer's retry-after is told": {
			Anthropic(0), []answer{later(429, "3")}, nil, 0,
			&provider.RetriesEnded{Retryable: true, RetryAfter: 3 * time.Second},
		},
		"a 400 is never retried": {
			Rules{For: time.Minute}, []answer{{status: 400, body: "bad"}}, nil, 0,
			&provider.RetriesEnded{},
		},
		"x-should-retry false is respected": {
			Rules{For: time.Minute}, []answer{{status: 503, header: map[string]string{"x-should-retry": "false"}, body: "no"}}, nil, 0,
			&provider.RetriesEnded{},
		},
		"x-should-retry true is respected": {
			Rules{For: time.Minute}, []answer{{status: 400, header: map[string]string{"x-should-retry": "true"}, body: "again"}, ok},
			[]time.Duration{500 * time.Millisecond}, 200, nil,
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := &script{answers: c.answers}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			var waits []time.Duration
			s, now := timed(t, hs.URL, c.rules, &waits)
			var notices []provider.RetryNotice
			ctx := heard(&notices)
			if name == "the context's retry deadline cuts For short" {
				ctx = provider.WithRetryDeadline(ctx, now.Add(3*time.Second))
			}
			res, err := s.Post(ctx, []byte(`{"n":1}`))
			if c.status != 0 {
				if err != nil || res.StatusCode != c.status {
					t.Fatalf("res %v, err %v; want a %d", res, err, c.status)
				}
				res.Body.Close()
			} else {
				var re *provider.RetriesEnded
				if !errors.As(err, &re) {
					t.Fatalf("err %v, want the answer's error as a RetriesEnded", err)
				}
				got := *re
				got.Err = nil
				if got != *c.ended {
					t.Fatalf("the retries ended %+v, want %+v", got, *c.ended)
				}
				var r *refused
				if !errors.As(err, &r) || r.body != c.answers[len(c.answers)-1].body {
					t.Fatalf("err %v, want the last answer's refusal inside", err)
				}
			}
			if !reflect.DeepEqual(waits, c.waits) {
				t.Fatalf("waits %v, want %v", waits, c.waits)
			}
			if len(srv.counts) != len(c.waits)+1 {
				t.Fatalf("%d attempts, want %d", len(srv.counts), len(c.waits)+1)
			}
			for i, n := range notices {
				if n.Attempt != i+2 || n.Wait != c.waits[i] || (c.rules.For > 0 && (n.Attempts != 0 || n.For != c.rules.For)) {
					t.Fatalf("notice %d: %+v, want attempt %d after %v, with no count and For %v", i, n, i+2, c.waits[i], c.rules.For)
				}
			}
			if len(notices) != len(c.waits) {
				t.Fatalf("%d retries told, want %d", len(notices), len(c.waits))
			}
		})
	}
}

// A connection error is retried within For as any transient answer is,
// and ends as the ConnectionError it is once the time is up.
func TestAConnectionErrorIsRetriedWithinFor(t *testing.T) {
	hs := httptest.NewServer(nil)
	addr := hs.URL
	hs.Close()
	var waits []time.Duration
	s, _ := timed(t, addr, Rules{For: 3 * time.Second}, &waits)
	_, err := s.Post(context.Background(), []byte("{}"))
	var ce *provider.ConnectionError
	// 0.5 + 1 = 1.5 s; the next 2 s would end at 3.5 s
	if !errors.As(err, &ce) || ce.Attempts != 3 || !reflect.DeepEqual(waits, []time.Duration{500 * time.Millisecond, time.Second}) {
		t.Fatalf("err %v, waits %v; want a ConnectionError after 3 attempts, 0.5 s and 1 s apart", err, waits)
	}
}

// With a gate, a retry-after is waited once, at the limiter (which holds
// the same time), and told as a wait there — the sender neither sleeps it
// nor tells it as a retry; a backoff is still the sender's, told as a
// retry, and the limiter holds nothing for it. Bounded by time, the wait
// at the limiter counts toward For, and one past what is left of For is
// told there before the retries end.
func TestAGatedRetryAfterIsWaitedAtTheLimiterOnly(t *testing.T) {
	ok := answer{status: 200, body: "data: ok\n\n"}
	for name, c := range map[string]struct {
		rules   Rules
		answers []answer
		slept   []time.Duration // by the sender
		held    []time.Duration // at the limiter, from the first answer
		status  int
	}{
		"a 429's retry-after": {
			Anthropic(2), []answer{{status: 429, header: map[string]string{"retry-after": "3"}}, ok},
			nil, []time.Duration{3 * time.Second}, 200,
		},
		"a 529's retry-after-ms, bounded by time": {
			Rules{For: time.Minute}, []answer{{status: 529, header: map[string]string{"retry-after-ms": "1500"}}, ok},
			nil, []time.Duration{1500 * time.Millisecond}, 200,
		},
		"a 503 without one backs off": {
			Anthropic(2), []answer{{status: 503}, ok},
			[]time.Duration{500 * time.Millisecond}, nil, 200,
		},
		// told at the limiter, then given up (the step clock moves on
		// by the wait all the same)
		"a retry-after past what is left of For": {
			Rules{For: 5 * time.Second}, []answer{{status: 429, header: map[string]string{"retry-after": "6"}, body: "later"}},
			nil, []time.Duration{6 * time.Second}, 0,
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := &script{answers: c.answers}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := &stepClock{now: start}
			var slept []time.Duration
			s := newSender(t, hs.URL, c.rules, &slept).WithLimiter(&ratelimit.Limiter{Clock: clock}, "anthropic", ratelimit.Identity("sk-test"))
			s.now = clock.Now
			s.sleep = func(ctx context.Context, d time.Duration) error {
				slept = append(slept, d)
				clock.Advance(d)
				return ctx.Err()
			}
			var held []provider.WaitNotice
			var retries []provider.RetryNotice
			ctx := provider.WithWaitNotice(heard(&retries), func(n provider.WaitNotice) { held = append(held, n) })
			res, err := s.Post(ctx, []byte(`{"n":1}`))
			if c.status != 0 {
				if err != nil || res.StatusCode != c.status {
					t.Fatalf("res %v, err %v", res, err)
				}
				res.Body.Close()
			} else if _, ok := provider.WaitTooLong(err); !ok {
				t.Fatalf("err %v, want the 429, its wait too long for the retries", err)
			}
			if !reflect.DeepEqual(slept, c.slept) && (len(slept) > 0 || len(c.slept) > 0) {
				t.Errorf("the sender slept %v, want %v", slept, c.slept)
			}
			if len(retries) != len(c.slept) {
				t.Errorf("%d retries told (%+v), want %d: one per backoff", len(retries), retries, len(c.slept))
			}
			if len(held) != len(c.held) {
				t.Fatalf("held %d times (%+v), want %d", len(held), held, len(c.held))
			}
			var total time.Duration
			for i, h := range held {
				if h.Attempt != 2 || !h.Until.Equal(start.Add(c.held[i])) {
					t.Errorf("held %+v, want attempt 2 until start+%v", h, c.held[i])
				}
				total += c.held[i]
			}
			for _, d := range c.slept {
				total += d
			}
			if got := clock.Now().Sub(start); got != total {
				t.Errorf("the request took %v of the clock, want %v: each wait once", got, total)
			}
		})
	}
}

// For counts from when the first attempt is sent: a wait at the limiter
// before it is no retry, and leaves the retries all their time.
func TestForCountsFromTheFirstAttemptNotFromAWaitBeforeIt(t *testing.T) {
	srv := &script{answers: []answer{{status: 503, body: "down"}, {status: 200, body: "data: ok\n\n"}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &stepClock{now: start}
	limiter := &ratelimit.Limiter{Clock: clock}
	var slept []time.Duration
	s := newSender(t, hs.URL, Rules{For: 10 * time.Second}, &slept).WithLimiter(limiter, "anthropic", ratelimit.Identity("sk-test"))
	s.now = clock.Now
	s.sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		clock.Advance(d)
		return ctx.Err()
	}
	key := ratelimit.Key{Endpoint: s.Target().URL.Host, Identity: ratelimit.Identity("sk-test")}
	if err := limiter.Observe(context.Background(), key, ratelimit.Observation{At: start, Status: 429, Limited: true, RetryAfter: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Post(context.Background(), []byte(`{"n":1}`))
	if err != nil {
		t.Fatalf("the 503 after a wait of 30 s at the limiter was not retried within For (10 s): %v", err)
	}
	res.Body.Close()
	if !reflect.DeepEqual(slept, []time.Duration{500 * time.Millisecond}) || len(srv.counts) != 2 {
		t.Fatalf("slept %v over %d attempts; want one backoff of 0.5 s between 2", slept, len(srv.counts))
	}
}
