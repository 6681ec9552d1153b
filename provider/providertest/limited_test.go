package providertest

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider/anthropic"
)

// clock is a test's own clock for a Limited fake: it moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// answer is what a raw request to the fake got.
type answer struct {
	status  int
	header  http.Header
	body    string
	readErr error // reading the body: a cut stream fails here
}

// send posts a Messages request (streamed or not) with key to the fake.
func send(t *testing.T, url, key string, stream bool) answer {
	t.Helper()
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
	req, err := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("sending to the fake: %v", err)
	}
	defer resp.Body.Close()
	b, readErr := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b), readErr: readErr}
}

// always answers every request with a short text.
func always(Request) Step { return Step{Text: "one two three"} }

// The limit admits Rate requests of a key per window, counted apart for
// each key, and refuses the next with a 429 rate_limit_error whose
// retry-after (seconds, rounded up, at least 1) and retry-after-ms say
// the wait: the one Limits.RetryAfter sets, or else the time until the
// key's window has room again. Every answer says the limit, what remains
// of it, and when it is whole again.
func TestTheLimitRefusesPastRatePerKeyWithItsRetryAfter(t *testing.T) {
	type req struct {
		after      time.Duration // the clock moves this much before it
		key        string
		status     int
		remaining  string
		retryAfter string // seconds; with retryMS only on 429s
		retryMS    string
	}
	for _, tc := range []struct {
		name   string
		limits Limits
		reqs   []req
	}{
		{"wait until the window has room", Limits{Rate: 2}, []req{
			{0, "a", 200, "1", "", ""},
			{300 * time.Millisecond, "a", 200, "0", "", ""},
			{0, "b", 200, "1", "", ""}, // another key's own window
			{0, "a", 429, "0", "1", "700"},
			{650 * time.Millisecond, "a", 429, "0", "1", "50"},
			{50 * time.Millisecond, "a", 200, "0", "", ""}, // the first left the window
			{0, "a", 429, "0", "1", "300"},
			{2 * time.Second, "a", 200, "1", "", ""},
		}},
		{"a fixed retry-after", Limits{Rate: 1, RetryAfter: 1500 * time.Millisecond}, []req{
			{0, "a", 200, "0", "", ""},
			{100 * time.Millisecond, "a", 429, "0", "2", "1500"},
			{900 * time.Millisecond, "a", 200, "0", "", ""},
		}},
		{"a small window", Limits{Rate: 3, Window: 10 * time.Millisecond}, []req{
			{0, "k", 200, "2", "", ""},
			{0, "k", 200, "1", "", ""},
			{0, "k", 200, "0", "", ""},
			{time.Millisecond, "k", 429, "0", "1", "9"},
			{9 * time.Millisecond, "k", 200, "2", "", ""}, // all three left: (0, 10ms]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			tc.limits.Now = c.Now
			fake := NewLimited(t, tc.limits)
			fake.Respond = always
			for i, r := range tc.reqs {
				c.add(r.after)
				got := send(t, fake.URL, r.key, false)
				if got.status != r.status {
					t.Fatalf("request %d (key %s): status %d, want %d: %s", i, r.key, got.status, r.status, got.body)
				}
				h := got.header
				if h.Get("anthropic-ratelimit-requests-limit") != strconv.Itoa(tc.limits.Rate) || h.Get("anthropic-ratelimit-requests-remaining") != r.remaining {
					t.Errorf("request %d: limit %q remaining %q, want %d and %s", i, h.Get("anthropic-ratelimit-requests-limit"), h.Get("anthropic-ratelimit-requests-remaining"), tc.limits.Rate, r.remaining)
				}
				if _, err := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-requests-reset")); err != nil {
					t.Errorf("request %d: the reset header is not RFC 3339: %v", i, err)
				}
				if h.Get("retry-after") != r.retryAfter || h.Get("retry-after-ms") != r.retryMS {
					t.Errorf("request %d: retry-after %q, retry-after-ms %q; want %q and %q", i, h.Get("retry-after"), h.Get("retry-after-ms"), r.retryAfter, r.retryMS)
				}
				if r.status == 429 && !strings.Contains(got.body, `"type":"rate_limit_error"`) {
					t.Errorf("request %d: the 429's body is not a rate_limit_error: %s", i, got.body)
				}
			}
			log := fake.Log()
			if len(log) != len(tc.reqs) {
				t.Fatalf("the log holds %d requests, %d were sent", len(log), len(tc.reqs))
			}
			for i, r := range tc.reqs {
				if log[i].Key != r.key || log[i].Status != r.status {
					t.Errorf("log %d: key %q status %d, want %q %d", i, log[i].Key, log[i].Status, r.key, r.status)
				}
			}
		})
	}
}

// However hard clients press, no span of the window holds more than Rate
// admitted requests of one key (Log.MaxIn over Admitted), and the limit is
// reached, so the bound is not held by the clients' slowness.
func TestNoWindowHoldsMoreThanRateAdmittedRequestsOfAKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rate   int
		window time.Duration
		keys   int
	}{
		{"one a second", 1, time.Second, 1},
		{"five a second, three keys", 5, time.Second, 3},
		{"twenty in 100ms", 20, 100 * time.Millisecond, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			fake := NewLimited(t, Limits{Rate: tc.rate, Window: tc.window, Now: c.Now})
			fake.Respond = always
			rng := rand.New(rand.NewPCG(1, 2))
			for range 40 * tc.rate {
				c.add(time.Duration(rng.Int64N(int64(tc.window) / int64(tc.rate) / 2)))
				send(t, fake.URL, strconv.Itoa(rng.IntN(tc.keys)), false)
			}
			log := fake.Log()
			for _, key := range log.Keys() {
				mine := log.Key(key)
				if got := mine.Admitted().MaxIn(tc.window); got != tc.rate {
					t.Errorf("key %s: at most %d admitted requests in a window, want the limit %d exactly", key, got, tc.rate)
				}
				if mine.Count(429) == 0 {
					t.Errorf("key %s: nothing refused: the clients never passed the limit", key)
				}
				if got := mine.MaxIn(tc.window); got <= tc.rate {
					t.Errorf("key %s: at most %d requests seen in a window, want more than the limit %d (the refused ones count there)", key, got, tc.rate)
				}
			}
		})
	}
}

// The same seed and the same requests give the same faults, cuts
// included; another seed gives others. Each fault is answered as
// Anthropic answers it, with its rate-limit headers.
func TestTheSeededFaultMixIsReproducible(t *testing.T) {
	run := func(seed uint64) (statuses []int, cuts []bool) {
		fake := NewLimited(t, Limits{Overloaded: 0.2, Failed: 0.2, Cut: 0.2, Seed: seed})
		fake.Respond = always
		for i := range 60 {
			got := send(t, fake.URL, "k", i%2 == 0)
			switch got.status {
			case 529:
				if !strings.Contains(got.body, `"type":"overloaded_error"`) {
					t.Errorf("a 529's body is not an overloaded_error: %s", got.body)
				}
			case 500:
				if !strings.Contains(got.body, `"type":"api_error"`) {
					t.Errorf("a 500's body is not an api_error: %s", got.body)
				}
			}
		}
		for _, s := range fake.Log() {
			statuses, cuts = append(statuses, s.Status), append(cuts, s.Cut)
		}
		return statuses, cuts
	}
	s1, c1 := run(7)
	s2, c2 := run(7)
	s3, c3 := run(8)
	if !equal(s1, s2) || !equal(c1, c2) {
		t.Errorf("the same seed gave other faults:\n%v %v\n%v %v", s1, c1, s2, c2)
	}
	if equal(s1, s3) && equal(c1, c3) {
		t.Errorf("seeds 7 and 8 gave the same faults: %v %v", s1, c1)
	}
	log := Log{}
	for i, s := range s1 {
		log = append(log, Seen{Status: s, Cut: c1[i]})
	}
	if log.Count(529) == 0 || log.Count(500) == 0 || log.Cuts() == 0 || log.Count(200) == log.Cuts() {
		t.Errorf("a fault of the mix never came (or nothing was answered whole): 529s %d, 500s %d, cuts %d, 200s %d", log.Count(529), log.Count(500), log.Cuts(), log.Count(200))
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A stream drawn to be cut ends mid-answer: its first events come, then
// the connection is dropped with no message_stop, the client's read fails,
// and the wire's Complete fails. A whole (not streamed) answer is never
// cut.
func TestACutStreamEndsMidAnswerWithoutMessageStop(t *testing.T) {
	fake := NewLimited(t, Limits{Cut: 1, Seed: 3})
	fake.Respond = always
	for i := range 5 {
		got := send(t, fake.URL, "k", true)
		if got.status != 200 || !strings.Contains(got.body, "event: message_start") {
			t.Fatalf("cut stream %d: status %d, body %q: want a 200 that started", i, got.status, got.body)
		}
		if strings.Contains(got.body, "message_stop") || got.readErr == nil {
			t.Fatalf("cut stream %d: read whole (error %v): %q", i, got.readErr, got.body)
		}
	}
	whole := send(t, fake.URL, "k", false)
	if whole.status != 200 || whole.readErr != nil || !strings.Contains(whole.body, `"stop_reason":"end_turn"`) {
		t.Errorf("a whole answer with Cut 1: status %d, error %v, body %q: want it whole", whole.status, whole.readErr, whole.body)
	}
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: fake.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), SampleRequest(), nil); err == nil {
		t.Errorf("Complete on a cut stream did not fail")
	}
	log := fake.Log()
	if log.Cuts() != 6 || log[5].Cut {
		t.Errorf("the log says %d cuts (the whole answer's: %v), want the 6 streams cut", log.Cuts(), log[5].Cut)
	}
}

// Each cut is logged with the text its answer had sent before it (the
// text deltas the client got: "" when the cut came before any text), and
// every request with its body and when its answer was written.
func TestACutIsLoggedWithTheTextItHadSent(t *testing.T) {
	fake := NewLimited(t, Limits{Cut: 1, Seed: 5})
	fake.Respond = always
	var got []answer
	for range 24 {
		got = append(got, send(t, fake.URL, "k", true))
	}
	log := fake.Log()
	before, after := 0, 0
	for i, s := range log {
		if !s.Cut {
			t.Fatalf("request %d was not cut, with Cut 1", i)
		}
		var sent strings.Builder // the text deltas the client got
		for _, half := range halves("one two three") {
			if strings.Contains(got[i].body, `"text":"`+half+`"`) {
				sent.WriteString(half)
			}
		}
		if s.CutText != sent.String() {
			t.Errorf("request %d: CutText %q, but the client got the text %q", i, s.CutText, sent.String())
		}
		if s.CutText == "" {
			before++
		} else {
			after++
		}
		if s.Answered.Before(s.At) {
			t.Errorf("request %d: answered at %v, before it arrived at %v", i, s.Answered, s.At)
		}
		if r := s.Request(); r.LastUserText() != "hi" || r.MaxTokens != 10 {
			t.Errorf("request %d: its Request has the prompt %q and max_tokens %d, want the body sent (hi, 10)", i, r.LastUserText(), r.MaxTokens)
		}
	}
	if before == 0 || after == 0 {
		t.Errorf("of 24 cuts, %d came before any text and %d after some: want both", before, after)
	}
}

// Throttle refuses the next request, whatever its key and with no limit
// set, with a 429 asking for the wait given, and tells the channel once
// that answer is written; the requests after it are answered as before.
// The refusal takes no place in the key's limit.
func TestThrottleRefusesTheNextRequestWithItsWait(t *testing.T) {
	for _, rate := range []int{0, 2} {
		fake := NewLimited(t, Limits{Rate: rate})
		fake.Respond = always
		if got := send(t, fake.URL, "a", false); got.status != 200 {
			t.Fatalf("rate %d: the first request: %d %s", rate, got.status, got.body)
		}
		told := fake.Throttle(2500 * time.Millisecond)
		got := send(t, fake.URL, "b", false)
		if got.status != 429 || got.header.Get("retry-after-ms") != "2500" || got.header.Get("retry-after") != "3" || !strings.Contains(got.body, `"type":"rate_limit_error"`) {
			t.Fatalf("rate %d: the throttled request: %d, retry-after %q, retry-after-ms %q, %s: want a 429 rate_limit_error asking for 2.5s", rate, got.status, got.header.Get("retry-after"), got.header.Get("retry-after-ms"), got.body)
		}
		select {
		case s := <-told:
			if s.Key != "b" || s.Status != 429 || s.RetryAfter != 2500*time.Millisecond || s.Answered.IsZero() {
				t.Errorf("rate %d: told %+v, want key b's 429 asking for 2.5s, answered", rate, s)
			}
		default:
			t.Errorf("rate %d: the throttled request was answered and the channel not told", rate)
		}
		if got := send(t, fake.URL, "b", false); got.status != 200 {
			t.Errorf("rate %d: the request after the throttled one: %d, want it answered (the throttle refuses one, and took no place in the limit)", rate, got.status)
		}
	}
}

// Log.Early lists the requests that came before the retry-after last
// given to their key had passed (another key's does not hold them back),
// and Log.MaxIn counts the most in any span of the window, (t-w, t].
func TestTheLogsChecks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name  string
		log   Log
		early []int // indexes into log
		max   int   // MaxIn(time.Second)
	}{
		{"none refused", Log{{At: ms(0), Status: 200}, {At: ms(10), Status: 200}, {At: ms(1010), Status: 200}}, nil, 2},
		{"back too soon", Log{
			{At: ms(0), Key: "a", Status: 429, RetryAfter: time.Second},
			{At: ms(500), Key: "b", Status: 200},  // another key
			{At: ms(999), Key: "a", Status: 200},  // early
			{At: ms(1000), Key: "a", Status: 200}, // on time
		}, []int{2}, 3}, // (0, 1000ms] leaves the first out
		{"the last retry-after counts", Log{
			{At: ms(0), Key: "a", Status: 429, RetryAfter: 100 * time.Millisecond},
			{At: ms(50), Key: "a", Status: 429, RetryAfter: 2 * time.Second}, // early itself
			{At: ms(1500), Key: "a", Status: 200},                            // early for the second
			{At: ms(2050), Key: "a", Status: 200},
		}, []int{1, 2}, 2},
		{"out of order arrivals", Log{{At: ms(900)}, {At: ms(0)}, {At: ms(1000)}, {At: ms(1899)}}, nil, 3},
		{"empty", nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			early := tc.log.Early()
			if len(early) != len(tc.early) {
				t.Fatalf("Early gave %d requests, want %d: %+v", len(early), len(tc.early), early)
			}
			for i, e := range early {
				if e.Seen != tc.log[tc.early[i]] {
					t.Errorf("Early[%d] is %+v, want request %d", i, e.Seen, tc.early[i])
				}
			}
			if got := tc.log.MaxIn(time.Second); got != tc.max {
				t.Errorf("MaxIn(1s) is %d, want %d", got, tc.max)
			}
		})
	}
}

// Log.EarlySent holds a request to a 429's retry-after only when it
// arrived grace or more after that 429 was answered: one on its way
// before the client could have read the 429 is not counted, nor is a 429
// never answered; of the 429s that hold it, the latest time counts.
func TestEarlySentCountsOnlyRequestsSentAfterThe429CouldBeRead(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	const grace = 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		log   Log
		early []int // indexes into log
		until []int // each one's Until, in ms
	}{
		{"in flight, then sent against it", Log{
			{At: ms(0), Key: "a", Status: 429, RetryAfter: time.Second, Answered: ms(10)},
			{At: ms(50), Key: "a", Status: 200},  // within grace of the answer: in flight
			{At: ms(110), Key: "a", Status: 200}, // sent after it could be read
			{At: ms(500), Key: "b", Status: 200}, // another key
			{At: ms(1000), Key: "a", Status: 200},
		}, []int{2}, []int{1000}},
		{"never answered", Log{
			{At: ms(0), Key: "a", Status: 429, RetryAfter: time.Second},
			{At: ms(500), Key: "a", Status: 200},
		}, nil, nil},
		{"the latest time of those that hold", Log{
			{At: ms(0), Key: "a", Status: 429, RetryAfter: 3 * time.Second, Answered: ms(5)},
			{At: ms(10), Key: "a", Status: 429, RetryAfter: time.Second, Answered: ms(15)}, // in flight
			{At: ms(2000), Key: "a", Status: 200},                                          // held by the first, not the second's earlier time
			{At: ms(2990), Key: "a", Status: 429, RetryAfter: 4 * time.Second, Answered: ms(2995)},
			{At: ms(3050), Key: "a", Status: 200}, // within grace of the third: held to the first's, passed
			{At: ms(3100), Key: "a", Status: 200}, // held by the third
		}, []int{2, 3, 5}, []int{3000, 3000, 6990}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			early := tc.log.EarlySent(grace)
			if len(early) != len(tc.early) {
				t.Fatalf("EarlySent gave %d requests, want %d: %+v", len(early), len(tc.early), early)
			}
			for i, e := range early {
				if e.Seen != tc.log[tc.early[i]] || !e.Until.Equal(ms(tc.until[i])) {
					t.Errorf("EarlySent[%d] is %+v until %v, want request %d until %v", i, e.Seen, e.Until, tc.early[i], ms(tc.until[i]))
				}
			}
		})
	}
}

// Limits that make no sense are refused with what was wrong.
func TestLimitsThatMakeNoSenseAreRefused(t *testing.T) {
	for _, tc := range []struct {
		limits Limits
		says   string
	}{
		{Limits{Rate: -1}, "Limits.Rate is -1"},
		{Limits{Window: -time.Second}, "must not be below 0"},
		{Limits{Cut: 1.5}, "Limits.Cut is 1.5"},
		{Limits{Overloaded: 0.5, Failed: 0.4, Cut: 0.2}, "add up to 1 at most"},
	} {
		err := tc.limits.check()
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: error %v, want one saying %q", tc.limits, err, tc.says)
		}
	}
	if err := (Limits{Rate: 5, Overloaded: 0.5, Failed: 0.5}).check(); err != nil {
		t.Errorf("sensible limits refused: %v", err)
	}
}
