package send

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/ratelimit/ratelimittest"
)

// stepClock is a ratelimit.Clock that waits no real time: After moves it
// on by the wait and fires at once, unless hold is set, when it never
// fires (a wait only the context ends).
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	hold bool
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *stepClock) After(d time.Duration) (<-chan time.Time, func()) {
	if c.hold {
		return nil, func() {}
	}
	c.Advance(d)
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch, func() {}
}

// limitedSender is a Sender of Anthropic Messages requests with key to
// the fake at base, with rules and the real waits.
func limitedSender(t *testing.T, base, key string, rules Rules) *Sender {
	t.Helper()
	u, err := url.Parse(base + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"X-Api-Key": {key}, "Content-Type": {"application/json"}, retryCount: {"0"}}
	return New(Target{Method: http.MethodPost, URL: u, Header: h}, &http.Client{}, rules, refuse)
}

const messages = `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`

// run has senders senders post posts requests each, all at once, and
// returns the errors of the posts that failed.
func run(senders []*Sender, posts int) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range posts {
				res, err := s.Post(context.Background(), []byte(messages))
				if err == nil {
					res.Body.Close()
					continue
				}
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

func TestALimiterSharedBySendersOfOneKeySendsNothingBeforeItsRetryAfterAndFewer429s(t *testing.T) {
	const senders, posts = 6, 2
	limits := providertest.Limits{Rate: 2, Window: 200 * time.Millisecond}
	count := map[bool]int{} // 429s, with and without the limiter
	for _, limited := range []bool{false, true} {
		fake := providertest.NewLimited(t, limits)
		fake.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
		// Probe: an answer on loopback never takes a minute; a busy
		// machine must not let a second request go before one comes.
		limiter := &ratelimit.Limiter{Probe: time.Minute}
		var all []*Sender
		for range senders {
			s := limitedSender(t, fake.URL, "sk-one", Anthropic(50))
			if limited {
				s = s.WithLimiter(limiter, "anthropic", ratelimit.Identity("sk-one"))
			}
			all = append(all, s)
		}
		// From the first request on: a key the limiter has heard nothing
		// of lets one go first, and its answer tells the key's budget.
		errs := run(all, posts)
		log := fake.Log()
		count[limited] = log.Count(http.StatusTooManyRequests)
		if !limited {
			continue
		}
		if len(errs) > 0 {
			t.Errorf("with the limiter, %d posts failed: %v", len(errs), errs)
		}
		if early := log.Early(); len(early) > 0 {
			t.Errorf("with the limiter, %d requests arrived before their key's retry-after had passed: %+v", len(early), early)
		}
		if n := len(log.Admitted()); n != senders*posts {
			t.Errorf("with the limiter, the fake admitted %d requests, want %d", n, senders*posts)
		}
	}
	if count[true] >= count[false] {
		t.Errorf("with the limiter the fake refused %d requests with a 429, without it %d: want fewer with it", count[true], count[false])
	}
	t.Logf("429s: %d without the limiter, %d with it", count[false], count[true])
}

// held is a wait notice observer collecting what it is told.
type held struct {
	mu      sync.Mutex
	notices []provider.WaitNotice
}

func (h *held) ctx(ctx context.Context) context.Context {
	return provider.WithWaitNotice(ctx, func(n provider.WaitNotice) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.notices = append(h.notices, n)
	})
}

func (h *held) take() []provider.WaitNotice {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.notices
	h.notices = nil
	return n
}

func TestAWaitAtTheLimiterIsToldUntilWhenAndWhy(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for name, c := range map[string]struct {
		first answer
		until time.Time
		why   string // with %s for the endpoint
	}{
		"a 429's retry-after": {
			first: answer{status: 429, header: map[string]string{"retry-after": "30"}, body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
			until: start.Add(30 * time.Second), why: "429 from %s: retry after 30s",
		},
		"the requests left spent": {
			first: answer{status: 200, header: map[string]string{
				"anthropic-ratelimit-requests-limit":     "50",
				"anthropic-ratelimit-requests-remaining": "0",
				"anthropic-ratelimit-requests-reset":     start.Add(5 * time.Second).Format(time.RFC3339),
			}, body: "data: ok\n\n"},
			until: start.Add(5 * time.Second), why: "requests: 0 of 50 left until 03:04:10 UTC",
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := &script{answers: []answer{c.first, {status: 200, body: "data: ok\n\n"}}}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			clock := &stepClock{now: start}
			limiter := &ratelimit.Limiter{Clock: clock}
			var waits []time.Duration
			s := newSender(t, hs.URL, Anthropic(0), &waits).WithLimiter(limiter, "anthropic", ratelimit.Identity("sk-test"))
			var h held
			ctx := h.ctx(ratelimit.WithModel(context.Background(), "m1"))
			if res, err := s.Post(ctx, []byte(`{"n":1}`)); err == nil {
				res.Body.Close()
			}
			if n := h.take(); len(n) > 0 {
				t.Fatalf("the first request, of a key the limiter knew nothing of, was held: %+v", n)
			}

			// Another model of the same key and endpoint has a gate of its own.
			res, err := s.Post(h.ctx(ratelimit.WithModel(context.Background(), "m2")), []byte(`{"n":1}`))
			if err != nil {
				t.Fatalf("another model's request: %v", err)
			}
			res.Body.Close()
			if n := h.take(); len(n) > 0 {
				t.Fatalf("another model's request was held by the first model's limit: %+v", n)
			}

			res, err = s.Post(ctx, []byte(`{"n":1}`))
			if err != nil {
				t.Fatalf("the request held: %v", err)
			}
			res.Body.Close()
			told := h.take()
			host := s.Target().URL.Host
			why := strings.ReplaceAll(c.why, "%s", host)
			if len(told) != 1 || told[0].Attempt != 1 || !told[0].Until.Equal(c.until) || told[0].Why != why || told[0].URL != provider.Redact(s.Target().URL) {
				t.Fatalf("told %+v, want once: attempt 1, until %v, why %q", told, c.until, why)
			}
			if !clock.Now().Equal(c.until) {
				t.Errorf("the request went at %v, want at %v, when the wait was over", clock.Now(), c.until)
			}
			key := ratelimit.Key{Endpoint: host, Identity: ratelimit.Identity("sk-test"), Model: "m1"}
			if st := limiter.State(key); !st.NextAllowed.Equal(c.until) {
				t.Errorf("the limiter's state of %s: %+v, want next allowed %v", key, st, c.until)
			}
			if len(srv.counts) != 3 {
				t.Errorf("the server saw %d requests, want 3", len(srv.counts))
			}
		})
	}
}

func TestAContextEndedWhileHeldEndsTheCallAndSendsNothing(t *testing.T) {
	srv := &script{answers: []answer{{status: 429, header: map[string]string{"retry-after": "30"}}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), hold: true}
	var waits []time.Duration
	s := newSender(t, hs.URL, Anthropic(0), &waits).WithLimiter(&ratelimit.Limiter{Clock: clock}, "anthropic", "")
	if _, err := s.Post(context.Background(), []byte(`{"n":1}`)); err == nil {
		t.Fatal("the 429 was not the first call's error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var h held
	ctx = provider.WithWaitNotice(ctx, func(provider.WaitNotice) { h.notices = append(h.notices, provider.WaitNotice{}); cancel() })
	_, err := s.Post(ctx, []byte(`{"n":1}`))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "rate limit") {
		t.Fatalf("err %v, want the context's, saying it waited for the rate limit", err)
	}
	if len(h.notices) != 1 {
		t.Errorf("told %d times, want once before the wait", len(h.notices))
	}
	if len(srv.counts) != 1 {
		t.Errorf("the server saw %d requests, want only the first", len(srv.counts))
	}
}

// Three processes' limiters sharing one store (ratelimittest.Memory, as
// one Postgres would be), each with senders of one key posting at once
// from the first request on: the provider never sees more than its limit
// in any span of its window — refused requests included — and refuses
// none. Without sharing the spending, each process spent its own copy of
// the budget and a key nothing was known of sent everything at once.
func TestLimitersSharingAStoreHoldAKeyToItsLimitFromTheFirstRequest(t *testing.T) {
	const processes, senders, posts = 3, 3, 2
	limits := providertest.Limits{Rate: 5, Window: 250 * time.Millisecond}
	fake := providertest.NewLimited(t, limits)
	fake.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
	store := &ratelimittest.Memory{}
	var all []*Sender
	for range processes {
		// Probe: an answer on loopback never takes a minute; a busy
		// machine must not let a request go before one comes. Poll: a
		// budget another process's answer gave is taken up soon.
		limiter := &ratelimit.Limiter{Shared: store, Probe: time.Minute, Poll: 10 * time.Millisecond}
		for range senders {
			all = append(all, limitedSender(t, fake.URL, "sk-one", Anthropic(50)).WithLimiter(limiter, "anthropic", ratelimit.Identity("sk-one")))
		}
	}
	errs := run(all, posts)
	log := fake.Log()
	if len(errs) > 0 {
		t.Errorf("%d posts failed: %v", len(errs), errs)
	}
	most, bound := log.MaxIn(limits.Window), limits.Rate+limits.Rate/10
	if most > bound {
		t.Errorf("the fake saw %d requests within %v (refused ones included), want at most its limit %d (+10%%: %d)", most, limits.Window, limits.Rate, bound)
	}
	if n := log.Count(http.StatusTooManyRequests); n > 0 {
		t.Errorf("the fake refused %d of %d requests with a 429, want none", n, len(log))
	}
	if n := len(log.Admitted()); n != processes*senders*posts {
		t.Errorf("the fake admitted %d requests, want the %d posts", n, processes*senders*posts)
	}
	t.Logf("%d requests, at most %d within %v (limit %d), %d refused", len(log), most, limits.Window, limits.Rate, log.Count(http.StatusTooManyRequests))
}

// Bounded by time, a retry-after past what is left of the bound goes to
// the gate as any retry-after does: the wait is told (so that a worker's
// observer hands the turn back to the queue, server/ratelimited.go) and
// only then given up, the answer's refusal ending the retries as too
// long. An observer that cancels the turn inside the notice has its
// context's error, not the refusal. Without a gate nothing is told and
// the retries end at once, as before.
func TestARetryAfterPastTheBoundIsToldAtTheGateBeforeTheRetriesEnd(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	handedOver := errors.New("handed over")
	for name, c := range map[string]struct {
		rules    Rules
		gated    bool
		handOver bool // the observer cancels the context inside the notice
		retry    string
		told     time.Duration // the wait told, from start; 0: none
		room     time.Duration // RetriesEnded.Room
	}{
		"gated, past what is left of For":            {rules: Rules{For: 10 * time.Second}, gated: true, retry: "60", told: 60 * time.Second, room: 10 * time.Second},
		"gated, past openai-go's RetryAfterLimit":    {rules: Rules{For: 10 * time.Minute, RetryAfterLimit: 2 * time.Minute}, gated: true, retry: "300", told: 300 * time.Second, room: 2 * time.Minute},
		"gated, an observer that hands it over":      {rules: Rules{For: 10 * time.Second}, gated: true, handOver: true, retry: "60", told: 60 * time.Second},
		"ungated, the retries end at once as before": {rules: Rules{For: 10 * time.Second}, retry: "60", room: 10 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			const body = `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`
			srv := &script{answers: []answer{{status: 429, header: map[string]string{"retry-after": c.retry}, body: body}, {status: 200, body: "data: ok\n\n"}}}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			var waits []time.Duration
			s := newSender(t, hs.URL, c.rules, &waits)
			// the sender's clock and the limiter's stand still: no real
			// time counts against the bound
			s.now = func() time.Time { return start }
			if c.gated {
				// hold: a wait only its context ends, so that one the
				// gate would let pass is seen as a second request
				s = s.WithLimiter(&ratelimit.Limiter{Clock: &stepClock{now: start, hold: true}}, "anthropic", ratelimit.Identity("sk-test"))
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			var h held
			ctx = h.ctx(ctx)
			if c.handOver {
				ctx = provider.WithWaitNotice(ctx, func(n provider.WaitNotice) {
					h.mu.Lock()
					h.notices = append(h.notices, n)
					h.mu.Unlock()
					cancel(handedOver)
				})
			}
			_, err := s.Post(ctx, []byte(`{"n":1}`))
			told := h.take()
			switch {
			case c.told == 0 && len(told) > 0:
				t.Errorf("told %+v, want no wait", told)
			case c.told > 0 && (len(told) != 1 || !told[0].Until.Equal(start.Add(c.told)) || told[0].Attempt != 2):
				t.Errorf("told %+v, want one wait of attempt 2 until %v", told, start.Add(c.told))
			}
			if len(srv.counts) != 1 {
				t.Errorf("the server saw %d requests, want only the first", len(srv.counts))
			}
			if len(waits) > 0 {
				t.Errorf("the sender slept %v itself, want no sleep", waits)
			}
			if c.handOver {
				var re *provider.RetriesEnded
				if !errors.Is(err, context.Canceled) || errors.As(err, &re) || context.Cause(ctx) != handedOver {
					t.Fatalf("err %v (cause %v), want the context's, not the refusal", err, context.Cause(ctx))
				}
				return
			}
			var re *provider.RetriesEnded
			if !errors.As(err, &re) {
				t.Fatalf("err %v, want a RetriesEnded", err)
			}
			var r *refused
			if !errors.As(err, &r) || r.status != 429 || r.body != body || err.Error() != "429 "+body {
				t.Errorf("err %v, want the 429's refusal inside, its text unchanged", err)
			}
			if !re.Retryable || !re.TooLong || re.Room != c.room {
				t.Errorf("ended %+v, want retryable, too long, room %v", re, c.room)
			}
			if _, ok := provider.WaitTooLong(err); !ok {
				t.Errorf("provider.WaitTooLong(%v) does not read it as too long", err)
			}
		})
	}
}

// An attempt that never reached the provider (a refused connection) is
// told to the limiter as such: no answer is coming for it, so its retry
// goes at its own backoff, not held at the gate "waiting for an answer
// to a request already sent" until the limiter's probe (a user's local
// server not yet started read that wait before every retry).
func TestARetryOfAnAttemptThatNeverConnectedIsNotHeldAtTheLimiter(t *testing.T) {
	addr := providertest.ClosedAddr(t)
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	limiter := &ratelimit.Limiter{Clock: clock}
	var waits []time.Duration
	s := newSender(t, "http://"+addr, Anthropic(3), &waits).WithLimiter(limiter, "anthropic", ratelimit.Identity("sk-test"))
	var h held
	_, err := s.Post(h.ctx(context.Background()), []byte(`{}`))
	var ce *provider.ConnectionError
	if !errors.As(err, &ce) || ce.Attempts != 4 {
		t.Fatalf("want a *provider.ConnectionError of 4 attempts, got %T: %v", err, err)
	}
	if told := h.take(); len(told) > 0 {
		t.Errorf("the retries were held at the limiter: %+v", told)
	}
	if len(waits) != 3 {
		t.Errorf("the sender waited %v, want its 3 backoffs", waits)
	}
	key := ratelimit.Key{Endpoint: addr, Identity: ratelimit.Identity("sk-test")}
	if st := limiter.State(key); st.Sent != 4 || st.Answers != 4 || st.Remaining == 0 {
		t.Errorf("the limiter's state after 4 attempts that never connected: %+v; want 4 sent, 4 answered, a budget left", st)
	}
}
