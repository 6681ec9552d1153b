package send

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// answer is one scripted answer of the fake server: a status, headers and
// a body; cut, when set, breaks the body off after the headers.
type answer struct {
	status int
	header map[string]string
	body   string
	cut    bool
}

// script is a loopback server giving its answers in turn (the last one
// again once they run out), keeping the retry count of each request.
type script struct {
	mu      sync.Mutex
	answers []answer
	counts  []string
	bodies  []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.counts)
	s.counts = append(s.counts, r.Header.Get(retryCount))
	s.bodies = append(s.bodies, string(b))
	a := s.answers[min(n, len(s.answers)-1)]
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if a.cut {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(`{"err`))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// refused is the test's Refusal: the status and body, as text.
type refused struct {
	status int
	body   string
}

func (r *refused) Error() string { return strconv.Itoa(r.status) + " " + r.body }

func refuse(_ *http.Request, res *http.Response, body []byte) error {
	if b, _ := io.ReadAll(res.Body); string(b) != string(body) {
		return errors.New("the answer's body does not read the body again")
	}
	return &refused{res.StatusCode, string(body)}
}

// newSender is a Sender to srv with rules, whose waits are recorded in
// waits and not waited, and whose jitter is none.
func newSender(t *testing.T, url string, rules Rules, waits *[]time.Duration) *Sender {
	t.Helper()
	tg := target(t, url)
	s := New(tg, &http.Client{}, rules, refuse)
	s.sleep = func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return ctx.Err()
	}
	s.jitter = func(int64) int64 { return 0 }
	return s
}

func target(t *testing.T, raw string) Target {
	t.Helper()
	u, err := url.Parse(raw + "/v1/x")
	if err != nil {
		t.Fatal(err)
	}
	return Target{Method: http.MethodPost, URL: u, Header: http.Header{retryCount: {"0"}, "Content-Type": {"application/json"}}}
}

func TestAttemptsAndWaitsFollowTheSDKsRules(t *testing.T) {
	ok := answer{status: 200, body: "data: ok\n\n"}
	for name, c := range map[string]struct {
		rules   Rules
		answers []answer
		waits   []time.Duration // the waits between attempts
		status  int             // of the answer returned; 0: an error
		err     string          // the error's text
		// held are the waits that were a retry-after: with a gate the
		// limiter holds the next attempt for them, told as a wait, and
		// the sender does not sleep them
		held []time.Duration
	}{
		"a 200 at once":                              {OpenAI(4), []answer{ok}, nil, 200, "", nil},
		"408 409 429 500 retried":                    {OpenAI(4), []answer{{status: 408}, {status: 409}, {status: 429}, {status: 500}, ok}, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}, 200, "", nil},
		"backoff at most 8 s":                        {Anthropic(6), []answer{{status: 503}}, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}, 0, "503 ", nil},
		"a 400 at once":                              {Anthropic(4), []answer{{status: 400, body: `{"error":{}}`}}, nil, 0, `400 {"error":{}}`, nil},
		"x-should-retry false on a 500":              {OpenAI(4), []answer{{status: 500, header: map[string]string{"x-should-retry": "false"}, body: "no"}}, nil, 0, "500 no", nil},
		"x-should-retry true on a 400":               {Anthropic(1), []answer{{status: 400, header: map[string]string{"x-should-retry": "true"}, body: "again"}}, []time.Duration{500 * time.Millisecond}, 0, "400 again", nil},
		"retry-after-ms first":                       {OpenAI(1), []answer{{status: 429, header: map[string]string{"retry-after-ms": "250", "retry-after": "3"}}, ok}, []time.Duration{250 * time.Millisecond}, 200, "", []time.Duration{250 * time.Millisecond}},
		"retry-after seconds":                        {Anthropic(1), []answer{{status: 429, header: map[string]string{"retry-after": "1.5"}}, ok}, []time.Duration{1500 * time.Millisecond}, 200, "", []time.Duration{1500 * time.Millisecond}},
		"openai: retry-after past 2 min":             {OpenAI(3), []answer{{status: 429, header: map[string]string{"retry-after": "121"}, body: "later"}}, nil, 0, "429 later", nil},
		"openai: retry-after of 2 min":               {OpenAI(1), []answer{{status: 429, header: map[string]string{"retry-after": "120"}}, ok}, []time.Duration{2 * time.Minute}, 200, "", []time.Duration{2 * time.Minute}},
		"anthropic: any retry-after":                 {Anthropic(1), []answer{{status: 429, header: map[string]string{"retry-after": "600"}}, ok}, []time.Duration{10 * time.Minute}, 200, "", []time.Duration{10 * time.Minute}},
		"openai: a negative one is unread":           {OpenAI(1), []answer{{status: 429, header: map[string]string{"retry-after-ms": "-5"}}, ok}, []time.Duration{500 * time.Millisecond}, 200, "", nil},
		"anthropic: a negative one is 0":             {Anthropic(1), []answer{{status: 429, header: map[string]string{"retry-after-ms": "-5"}}, ok}, []time.Duration{0}, 200, "", nil},
		"a past date is 0":                           {OpenAI(1), []answer{{status: 503, header: map[string]string{"retry-after": "Fri, 31 Dec 1999 23:00:00 GMT"}}, ok}, []time.Duration{0}, 200, "", nil},
		"a date 30 s on":                             {Anthropic(1), []answer{{status: 503, header: map[string]string{"retry-after": "Sat, 01 Jan 2000 00:00:30 GMT"}}, ok}, []time.Duration{30 * time.Second}, 200, "", []time.Duration{30 * time.Second}},
		"no retries":                                 {OpenAI(0), []answer{{status: 500, body: "down"}}, nil, 0, "500 down", nil},
		"anthropic: a dropped error body is retried": {Anthropic(1), []answer{{status: 400, cut: true}, ok}, []time.Duration{500 * time.Millisecond}, 200, "", nil},
		"openai: a dropped error body ends the call": {OpenAI(1), []answer{{status: 400, cut: true}, ok}, nil, 0, "unexpected EOF", nil},
	} {
		// Gated, the same attempts: the limiter observes every answer,
		// and a retry-after is waited there, once, told as a wait, and
		// not slept by the sender too; a backoff is the sender's
		// (docs/ratelimits.md, "Retries").
		for _, gated := range []bool{false, true} {
			name := name
			if gated {
				name = "gated/" + name
			}
			t.Run(name, func(t *testing.T) {
				srv := &script{answers: c.answers}
				hs := httptest.NewServer(srv)
				defer hs.Close()
				var waits []time.Duration
				s := newSender(t, hs.URL, c.rules, &waits)
				start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
				s.now = func() time.Time { return start }
				ctx := context.Background()
				var held []provider.WaitNotice
				if gated {
					clock := &stepClock{now: start}
					s = s.WithLimiter(&ratelimit.Limiter{Clock: clock}, "anthropic", ratelimit.Identity("sk-test"))
					s.sleep = func(ctx context.Context, d time.Duration) error {
						waits = append(waits, d)
						clock.Advance(d)
						return ctx.Err()
					}
					ctx = provider.WithWaitNotice(ctx, func(n provider.WaitNotice) { held = append(held, n) })
				}
				res, err := s.Post(ctx, []byte(`{"n":1}`))
				want := c.waits
				if gated {
					want = without(c.waits, c.held)
					if len(held) != len(c.held) {
						t.Fatalf("the limiter held %d attempts (%+v), want %d, one for each retry-after", len(held), held, len(c.held))
					}
					for i, h := range held {
						if got := h.Until.Sub(start); got != c.held[i] || h.Attempt != i+2 {
							t.Fatalf("held %+v: attempt %d until start+%v, want attempt %d until start+%v", held, h.Attempt, got, i+2, c.held[i])
						}
					}
				}
				if c.status != 0 {
					if err != nil || res.StatusCode != c.status {
						t.Fatalf("res %v, err %v", res, err)
					}
					res.Body.Close()
				} else if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				if !reflect.DeepEqual(waits, want) && (len(waits) > 0 || len(want) > 0) {
					t.Fatalf("the sender slept %v, want %v", waits, want)
				}
				if len(srv.counts) != len(c.waits)+1 {
					t.Fatalf("%d attempts, %d waits", len(srv.counts), len(c.waits))
				}
				for i, n := range srv.counts {
					if n != strconv.Itoa(i) || srv.bodies[i] != `{"n":1}` {
						t.Fatalf("attempt %d: retry count %q, body %q", i, n, srv.bodies[i])
					}
				}
			})
		}
	}
}

// without is waits less the first of each of drop, in order.
func without(waits, drop []time.Duration) []time.Duration {
	var out []time.Duration
	for _, w := range waits {
		if len(drop) > 0 && w == drop[0] {
			drop = drop[1:]
			continue
		}
		out = append(out, w)
	}
	return out
}

func TestTheJitterTakesAQuarterOfTheBackoffAtMost(t *testing.T) {
	for n, base := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		var asked int64
		d := Backoff(n, func(q int64) int64 { asked = q; return q - 1 })
		if asked != int64(base/4) || d != base-base/4+1 {
			t.Fatalf("retry %d: delay %v, jitter asked for [0, %d)", n, d, asked)
		}
		if d := Backoff(n, nil); d > base || d <= base-base/4 {
			t.Fatalf("retry %d: a random jitter gave %v, want in (%v, %v]", n, d, base-base/4, base)
		}
	}
}

func TestAConnectionErrorIsRetriedAndReturnedAsNetHTTPs(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	addr := hs.URL
	hs.Close() // nothing listens there now
	var waits []time.Duration
	s := newSender(t, addr, OpenAI(2), &waits)
	_, err := s.Post(context.Background(), []byte("{}"))
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Op != "Post" || len(waits) != 2 {
		t.Fatalf("err %v, waits %v", err, waits)
	}
}

func TestADoneContextEndsTheCallWithItsError(t *testing.T) {
	srv := &script{answers: []answer{{status: 503}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var waits []time.Duration
	s := newSender(t, hs.URL, Anthropic(5), &waits)
	s.sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	_, err := s.Post(ctx, []byte("{}"))
	if got, want := fmt.Sprintf("canceled %v, %q after %d attempts", errors.Is(err, context.Canceled), err, len(srv.counts)), `canceled true, "context canceled" after 1 attempts`; got != want {
		t.Fatalf("Post: %s; want %s", got, want)
	}
}

func TestOpenAIsRulesRefuseARedirectToAnotherOriginAndDoNotRetry(t *testing.T) {
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/x", http.StatusTemporaryRedirect)
	}))
	defer hs.Close()
	var waits []time.Duration
	s := newSender(t, hs.URL, OpenAI(3), &waits)
	_, err := s.Post(context.Background(), []byte("{}"))
	if err == nil || !strings.Contains(err.Error(), "request URL origin must match the configured base URL") || len(waits) != 0 {
		t.Fatalf("err %v, waits %v", err, waits)
	}
}

func TestOriginsCompareSchemeHostAndEffectivePort(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://api.openai.com/v1", "https://API.openai.com:443/x", true},
		{"http://127.0.0.1/v1", "http://127.0.0.1:80", true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8081", false},
		{"https://a.example", "http://a.example", false},
		{"https://a.example", "https://b.example", false},
	} {
		a, _ := url.Parse(c.a)
		b, _ := url.Parse(c.b)
		if originsMatch(a, b) != c.same {
			t.Errorf("originsMatch(%s, %s) = %v", c.a, c.b, !c.same)
		}
	}
}

func TestAHeaderSetByTheCallerIsNotNumbered(t *testing.T) {
	srv := &script{answers: []answer{{status: 500}, {status: 200}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	tg := target(t, hs.URL)
	tg.Header.Set(retryCount, "7")
	var waits []time.Duration
	s := newSender(t, hs.URL, OpenAI(1), &waits).With(tg)
	res, err := s.Post(context.Background(), []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if strings.Join(srv.counts, ",") != "7,7" {
		t.Fatalf("retry counts %v", srv.counts)
	}
}

// jar is a cookie jar with one cookie for every URL.
type jar struct{}

func (jar) SetCookies(*url.URL, []*http.Cookie) {}
func (jar) Cookies(*url.URL) []*http.Cookie     { return []*http.Cookie{{Name: "c", Value: "1"}} }

func TestAClientWithACookieJarDoesNotWriteTheSharedHeader(t *testing.T) {
	srv := &script{answers: []answer{{status: 200}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	tg := target(t, hs.URL)
	s := New(tg, &http.Client{Jar: jar{}}, OpenAI(0), refuse)
	for range 2 {
		res, err := s.Post(context.Background(), []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if c := tg.Header.Values("Cookie"); len(c) != 0 {
		t.Fatalf("the shared header got the cookies %v", c)
	}
}

// keep is a transport that keeps the request it is given and answers 200.
type keep struct{ req *http.Request }

func (k *keep) RoundTrip(r *http.Request) (*http.Response, error) {
	k.req = r
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

func TestTheBodyIsOneNetHTTPWritesWithTheHeaders(t *testing.T) {
	// net/http writes the headers and the body in one write only for a
	// body it knows is in memory (a *bytes.Reader, or io.NopCloser of
	// one); any other has its headers flushed first, in a packet alone.
	k := &keep{}
	s := New(target(t, "http://127.0.0.1:1"), &http.Client{Transport: k}, Anthropic(0), refuse)
	res, err := s.Post(context.Background(), []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	want := reflect.TypeOf(io.NopCloser(bytes.NewReader(nil)))
	if got := reflect.TypeOf(k.req.Body); got != want {
		t.Fatalf("the body is a %v, not the %v net/http writes with the headers", got, want)
	}
}

// An answer can come before its request is written whole (a server may
// answer without reading the body); until the write ends, the body's
// bytes are net/http's, and Writes says so.
func TestWritesIsDoneOnlyOnceNetHTTPHasWrittenTheBody(t *testing.T) {
	read := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "8") // the answer ends before the handler does
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "answered")
		w.(http.Flusher).Flush()
		<-read // the body stays unread until the test has looked
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer hs.Close()
	defer close(read)
	var waits []time.Duration
	s := newSender(t, hs.URL, Anthropic(0), &waits)
	body := make([]byte, 64<<20) // more than loopback's socket buffers hold
	var w Writes
	res, err := s.PostWritten(context.Background(), body, nil, &w)
	if err != nil {
		t.Fatal(err)
	}
	// Looked at before the answer's body is read: net/http cannot have
	// given up the write yet. (Once the answer is read whole, net/http
	// waits 50 ms for the write and then closes the connection, ending
	// the write: Writes is then rightly done, and a loaded machine can
	// get there before a check made after reading.)
	if w.Done() {
		t.Fatal("Writes is done while net/http is still writing the body")
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || string(b) != "answered" {
		t.Fatalf("answer %q, %v", b, err)
	}
	read <- struct{}{}
	for deadline := time.Now().Add(20 * time.Second); !w.Done(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Writes is not done 20 s after the server read the body")
		}
	}
}

// The request a Refusal is given (and the answer's Request) is the
// error's own: changing its header or URL, as a log's redaction deletes
// the Authorization header, changes neither the Target nor what the
// Sender sends next.
func TestARefusalsRequestIsACopyNotTheSharedTarget(t *testing.T) {
	srv := &script{answers: []answer{{status: 400, body: "no"}}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	tg := target(t, hs.URL)
	tg.Header.Set("Authorization", "Bearer k")
	var auth []string
	s := New(tg, &http.Client{Timeout: time.Minute}, OpenAI(0), func(req *http.Request, res *http.Response, body []byte) error {
		auth = append(auth, req.Header.Get("Authorization"))
		req.Header.Del("Authorization")
		req.URL.Path = "/elsewhere"
		res.Request.Header.Del("Content-Type")
		res.Request.URL.Host = "elsewhere"
		return refuse(req, res, body)
	})
	for range 2 {
		if _, err := s.Post(context.Background(), []byte("{}")); err == nil {
			t.Fatal("no refusal")
		}
	}
	if strings.Join(auth, ",") != "Bearer k,Bearer k" {
		t.Fatalf("the refusals' requests had the Authorization %q", auth)
	}
	if got := s.Target(); got.Header.Get("Authorization") != "Bearer k" || got.Header.Get("Content-Type") != "application/json" || got.URL.Path != "/v1/x" || got.URL.Host != tg.URL.Host {
		t.Fatalf("the target became %v %v", got.URL, got.Header)
	}
}
