package ratewait

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// stepClock is a ratelimit.Clock whose waits pass at once, moving it on.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time { return c.now }
func (c *stepClock) After(d time.Duration) (<-chan time.Time, func()) {
	c.now = c.now.Add(max(0, d))
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch, func() {}
}

// answer is an answer of status with header h and body.
func answer(status int, h http.Header, body string) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

// The gate, driven as an SDK middleware drove it, has each attempt wait at the limiter —
// the attempt numbered by the SDK's retry count — and observes its
// answer, leaving an error body whole for the SDK to read.
func TestTheGateWaitsBeforeEachAttemptAndObservesItsAnswer(t *testing.T) {
	clock := &stepClock{now: time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)}
	lim := &ratelimit.Limiter{Clock: clock}
	g := New(lim, "anthropic", ratelimit.Identity("sk-secret"))
	const refusal = `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`
	var notices []provider.WaitNotice
	ctx := provider.WithWaitNotice(ratelimit.WithModel(context.Background(), "m"), func(n provider.WaitNotice) { notices = append(notices, n) })
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example:8443/v1/messages", nil)
	r.Header.Set("X-Stainless-Retry-Count", "0")
	res, err := middleware(g, r, func(*http.Request) (*http.Response, error) {
		return answer(http.StatusTooManyRequests, http.Header{"Retry-After": {"20"}}, refusal), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(res.Body); string(b) != refusal {
		t.Errorf("the SDK reads the error body %q, want it whole: %q", b, refusal)
	}
	key := ratelimit.Key{Endpoint: "api.example:8443", Identity: ratelimit.Identity("sk-secret"), Model: "m"}
	if st := lim.State(key); !st.NextAllowed.Equal(clock.now.Add(20 * time.Second)) {
		t.Fatalf("the key %v may send from %v, want the 429's retry-after, 20s on", key, st.NextAllowed)
	}
	r.Header.Set("X-Stainless-Retry-Count", "1")
	sent := false
	if _, err := middleware(g, r, func(*http.Request) (*http.Response, error) { sent = true; return answer(200, nil, ""), nil }); err != nil {
		t.Fatal(err)
	}
	if !sent || len(notices) != 1 || notices[0].Attempt != 2 || !strings.Contains(notices[0].Why, "api.example:8443") {
		t.Errorf("sent %v, notices %+v: want the retry, attempt 2, told one wait naming the host, then sent", sent, notices)
	}
}

// A context ended while the attempt waits ends it with the limiter's
// error, which wraps the context's; nothing is sent.
func TestAWaitEndedByItsContextSendsNothing(t *testing.T) {
	lim := &ratelimit.Limiter{}
	g := New(lim, "openai", "k:1")
	u, _ := url.Parse("https://api.example/v1/chat/completions")
	_ = lim.Observe(context.Background(), g.Key(context.Background(), u), ratelimit.FromResponse("openai", 429, http.Header{"Retry-After": {"3600"}}, nil, time.Now()))
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader("body"))
	ctx = provider.WithWaitNotice(ctx, func(provider.WaitNotice) { cancel() })
	r = r.WithContext(ctx)
	_, err := middleware(g, r, func(*http.Request) (*http.Response, error) {
		t.Fatal("a request was sent before its key's retry-after")
		return nil, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the error is %v, want one wrapping context.Canceled", err)
	}
}

// Without a limiter there is no gate: the middleware passes each
// request on, and a Pass observes nothing.
func TestWithoutALimiterNothingWaits(t *testing.T) {
	g := New(nil, "gemini", "k:1")
	if g != nil {
		t.Fatalf("New(nil) is %v, want nil", g)
	}
	r, _ := http.NewRequest(http.MethodPost, "https://api.example/", nil)
	res, err := middleware(g, r, func(*http.Request) (*http.Response, error) { return answer(200, nil, "ok"), nil })
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("%v %v", res, err)
	}
	p, err := g.Wait(context.Background(), ratelimit.Key{}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if o := p.Observe(answer(429, nil, ""), nil); o.Limited {
		t.Errorf("a nil gate's Pass read %+v", o)
	}
}

// An answer is observed with the ticket of the attempt it answers, not
// the latest request's: two requests in flight answered out of order, the
// later one's answer sets the budget and the earlier one's, older, does
// not undo it. The same steps taken on a limiter directly, with each
// attempt's own ticket, leave the same state; taken with the latest
// request's ticket (Observe), a larger budget.
func TestAnAnswerIsObservedWithTheTicketOfItsOwnAttempt(t *testing.T) {
	start := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	key := ratelimit.Key{Endpoint: "api.example", Identity: "k:1", Model: "m"}
	left := http.Header{"Anthropic-Ratelimit-Requests-Limit": {"20"}, "Anthropic-Ratelimit-Requests-Remaining": {"10"}}
	ctx := context.Background()

	viaGate := &ratelimit.Limiter{Clock: &stepClock{now: start}}
	g := New(viaGate, "anthropic", key.Identity)
	var passes []Pass
	for range 3 {
		p, err := g.Wait(ctx, key, 1, "u")
		if err != nil {
			t.Fatal(err)
		}
		passes = append(passes, p)
		if len(passes) == 1 {
			p.Observe(answer(200, left, ""), nil) // the first, alone: the budget is 10
		}
	}
	passes[2].Observe(answer(200, left, ""), nil) // the third's answer comes first
	passes[1].Observe(answer(200, left, ""), nil) // then the second's

	o := ratelimit.FromResponse("anthropic", 200, left, nil, start)
	o.From = key.Endpoint
	direct := &ratelimit.Limiter{Clock: &stepClock{now: start}}
	latest := &ratelimit.Limiter{Clock: &stepClock{now: start}}
	for _, l := range []*ratelimit.Limiter{direct, latest} {
		var tickets []ratelimit.Ticket
		for range 3 {
			w, _ := l.Wait(ctx, key, nil)
			tickets = append(tickets, w.Ticket)
			if len(tickets) == 1 {
				_ = l.ObserveAnswer(ctx, key, w.Ticket, o)
			}
		}
		for _, n := range []int{2, 1} {
			if l == direct {
				_ = l.ObserveAnswer(ctx, key, tickets[n], o)
			} else {
				_ = l.Observe(ctx, key, o)
			}
		}
	}
	got, want, wrong := viaGate.State(key), direct.State(key), latest.State(key)
	if got.Remaining != want.Remaining || got.Sent != want.Sent || got.Answered != want.Answered {
		t.Errorf("through the gate: budget %d after %d sent, set by the answer to request %d; want %d after %d, by %d (each answer with its attempt's own ticket)",
			got.Remaining, got.Sent, got.Answered, want.Remaining, want.Sent, want.Answered)
	}
	if wrong.Remaining <= want.Remaining {
		t.Fatalf("the check cannot fail: observed as the latest request's, the budget is %d, not above the tickets' %d", wrong.Remaining, want.Remaining)
	}
}

// WaitUntil tells the wait at the gate before it gives it up for ending
// past its limit: the error wraps ErrPastLimit and nothing is let
// through. A wait within the limit passes; an observer that cancels the
// context inside the notice has its context's error, not ErrPastLimit.
func TestWaitUntilTellsAWaitPastItsLimitThenGivesItUp(t *testing.T) {
	start := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		limit    time.Duration // from start
		handOver bool
		want     error // nil: let through
	}{
		"past the limit":                        {limit: 10 * time.Second, want: ErrPastLimit},
		"within the limit":                      {limit: 30 * time.Second},
		"no limit":                              {},
		"past the limit, the context cancelled": {limit: 10 * time.Second, handOver: true, want: context.Canceled},
	} {
		t.Run(name, func(t *testing.T) {
			clock := &stepClock{now: start}
			lim := &ratelimit.Limiter{Clock: clock}
			g := New(lim, "anthropic", "k:1")
			u, _ := url.Parse("https://api.example/v1/messages")
			key := g.Key(context.Background(), u)
			_ = lim.Observe(context.Background(), key, ratelimit.FromResponse("anthropic", 429, http.Header{"Retry-After": {"20"}}, nil, start))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var told []provider.WaitNotice
			ctx = provider.WithWaitNotice(ctx, func(n provider.WaitNotice) {
				told = append(told, n)
				if c.handOver {
					cancel()
				}
			})
			var limit time.Time
			if c.limit > 0 {
				limit = start.Add(c.limit)
			}
			_, err := g.WaitUntil(ctx, key, 2, "https://api.example/v1/messages", limit)
			if len(told) != 1 || !told[0].Until.Equal(start.Add(20*time.Second)) || told[0].Attempt != 2 {
				t.Errorf("told %+v, want one wait of attempt 2 until %v", told, start.Add(20*time.Second))
			}
			switch {
			case c.want == nil && err != nil:
				t.Errorf("err %v, want the attempt let through", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("err %v, want one wrapping %v", err, c.want)
			case c.want == context.Canceled && errors.Is(err, ErrPastLimit):
				t.Errorf("err %v wraps ErrPastLimit, want the context's alone", err)
			}
		})
	}
}

// An attempt through the middleware that never connected (a refused
// connection) is told to the limiter as unreached, so the next attempt
// goes at once rather than held until the limiter's probe; one that
// connected and then broke (no answer, but it may have been read) still
// holds the next, as the limiter cannot know it will get no answer.
func TestAnAttemptThatNeverConnectedHoldsNoOtherAtTheLimiter(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		held bool
	}{
		{"refused", &url.Error{Op: "Post", URL: "https://api.example/v1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, false},
		{"reset after writing", &url.Error{Op: "Post", URL: "https://api.example/v1", Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &stepClock{now: time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)}
			g := New(&ratelimit.Limiter{Clock: clock}, "anthropic", ratelimit.Identity("sk"))
			var notices []provider.WaitNotice
			ctx := provider.WithWaitNotice(context.Background(), func(n provider.WaitNotice) { notices = append(notices, n) })
			r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example/v1/messages", nil)
			if _, err := middleware(g, r, func(*http.Request) (*http.Response, error) { return nil, c.err }); err == nil {
				t.Fatal("the attempt's error was lost")
			}
			if _, err := middleware(g, r, func(*http.Request) (*http.Response, error) { return answer(200, nil, ""), nil }); err != nil {
				t.Fatal(err)
			}
			if held := len(notices) > 0; held != c.held {
				t.Errorf("the next attempt held: %v (%+v), want %v", held, notices, c.held)
			}
		})
	}
}

// The gate numbers an attempt (as the middleware did) after those the request's earlier
// sends made (provider.WithAttemptsBefore), as the wires' senders do.
func TestTheGateNumbersAttemptsAfterEarlierSends(t *testing.T) {
	clock := &stepClock{now: time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)}
	g := New(&ratelimit.Limiter{Clock: clock}, "anthropic", ratelimit.Identity("sk"))
	var notices []provider.WaitNotice
	ctx := provider.WithWaitNotice(provider.WithAttemptsBefore(context.Background(), 20), func(n provider.WaitNotice) { notices = append(notices, n) })
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example/v1/messages", nil)
	r.Header.Set("X-Stainless-Retry-Count", "0")
	if _, err := middleware(g, r, func(*http.Request) (*http.Response, error) {
		return answer(http.StatusTooManyRequests, http.Header{"Retry-After": {"20"}}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	r.Header.Set("X-Stainless-Retry-Count", "1")
	if _, err := middleware(g, r, func(*http.Request) (*http.Response, error) { return answer(200, nil, ""), nil }); err != nil {
		t.Fatal(err)
	}
	if len(notices) != 1 || notices[0].Attempt != 22 {
		t.Errorf("notices %+v: want one wait, for attempt 22 (the send's second after 20)", notices)
	}
}

// middleware is g as an SDK middleware was (the wires no longer send
// through an SDK; the tests drive the gate through it, as one did): a nil
// gate's passes the request on; each attempt waits at the gate, its key named by the
// request's URL as it reaches the middleware, and its answer is
// observed. The attempt is the SDK's X-Stainless-Retry-Count plus one,
// numbered after the attempts of earlier sends its context counts
// (provider.AttemptsBefore). It is to be the last middleware, closest to
// the wire, so that it sees the URL a platform's middleware routed the
// request to.
func middleware(g *Gate, r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	if g == nil {
		return next(r)
	}
	ctx := r.Context()
	// numbered after the attempts of the request's earlier sends
	// (provider.AttemptsBefore), as the wires' own senders number theirs
	attempt := provider.AttemptsBefore(ctx) + 1
	if n, err := strconv.Atoi(r.Header.Get("X-Stainless-Retry-Count")); err == nil && n > 0 {
		attempt += n
	}
	pass, err := g.Wait(ctx, g.Key(ctx, r.URL), attempt, provider.Redact(r.URL))
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	res, err := next(r)
	if err == nil {
		pass.Observe(res, nil)
	} else if provider.Unconnected(err) {
		pass.Unreached()
	}
	return res, err
}
