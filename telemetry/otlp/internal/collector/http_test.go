package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scripted is what a scripted collector answers to one request.
type scripted struct {
	status int
	header map[string]string
	body   []byte
}

// scriptedServer answers the requests it gets with script in turn (the
// last one again when the script is done) and records them.
type scriptedServer struct {
	*httptest.Server
	mu       sync.Mutex
	script   []scripted
	requests []*http.Request
	bodies   [][]byte // decompressed
}

func newScripted(t *testing.T, script ...scripted) *scriptedServer {
	s := &scriptedServer{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			z, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Errorf("gzip: %v", err)
				return
			}
			body, _ = io.ReadAll(z)
		}
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, r)
		s.bodies = append(s.bodies, body)
		a := s.script[min(n, len(s.script)-1)]
		s.mu.Unlock()
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		w.Write(a.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptedServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// recordWaits makes c record the waits between its attempts instead of
// waiting.
func recordWaits(c *Client) *[]time.Duration {
	var waits []time.Duration
	c.wait = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return &waits
}

func httpClient(t *testing.T, url string, gzip bool) *Client {
	t.Helper()
	c, err := New(Config{Signal: Traces, Protocol: HTTPProtobuf, URL: url + "/v1/traces", Gzip: gzip, Timeout: DefaultTimeout,
		Headers: map[string]string{"x-tenant": "a b", "Authorization": "Bearer k"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

var protobufAnswer = map[string]string{"Content-Type": "application/x-protobuf"}

func TestHTTPPostsTheBodyWithTheHeaders(t *testing.T) {
	for _, gz := range []bool{false, true} {
		s := newScripted(t, scripted{status: 200, header: protobufAnswer, body: []byte("answer")})
		c := httpClient(t, s.URL, gz)
		resp, err := c.Export(context.Background(), []byte("request bytes"))
		if err != nil {
			t.Fatal(err)
		}
		if string(resp) != "answer" {
			t.Errorf("answer %q", resp)
		}
		r := s.requests[0]
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || string(s.bodies[0]) != "request bytes" {
			t.Errorf("%s %s %q", r.Method, r.URL.Path, s.bodies[0])
		}
		want := map[string]string{"Content-Type": "application/x-protobuf", "X-Tenant": "a b", "Authorization": "Bearer k"}
		if gz {
			want["Content-Encoding"] = "gzip"
		}
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				t.Errorf("gzip %v: %s: %q, want %q", gz, k, got, v)
			}
		}
		if !strings.HasPrefix(r.Header.Get("User-Agent"), "OTel OTLP Exporter Go/") {
			t.Errorf("User-Agent %q", r.Header.Get("User-Agent"))
		}
	}
}

func TestHTTPAnAnswerThatIsNotProtobufIsNone(t *testing.T) {
	s := newScripted(t, scripted{status: 200, body: []byte("{}")})
	resp, err := httpClient(t, s.URL, false).Export(context.Background(), []byte("x"))
	if err != nil || resp != nil {
		t.Fatalf("%q, %v", resp, err)
	}
}

func TestHTTPRetries503ThenSucceeds(t *testing.T) {
	s := newScripted(t, scripted{status: 503}, scripted{status: 200, header: protobufAnswer, body: []byte("ok")})
	c := httpClient(t, s.URL, true)
	waits := recordWaits(c)
	resp, err := c.Export(context.Background(), []byte("x"))
	if err != nil || string(resp) != "ok" {
		t.Fatalf("%q, %v", resp, err)
	}
	if s.count() != 2 || len(*waits) != 1 {
		t.Fatalf("%d requests, waits %v", s.count(), *waits)
	}
	if w := (*waits)[0]; w < 2500*time.Millisecond || w > 7500*time.Millisecond {
		t.Errorf("waited %v, want 5 s ±50%%", w)
	}
	if string(s.bodies[1]) != "x" {
		t.Errorf("the retry's body %q", s.bodies[1])
	}
}

func TestHTTPRetryAfterIsHonoured(t *testing.T) {
	s := newScripted(t, scripted{status: 429, header: map[string]string{"Retry-After": "20"}}, scripted{status: 200})
	c := httpClient(t, s.URL, false)
	waits := recordWaits(c)
	if _, err := c.Export(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if len(*waits) != 1 || (*waits)[0] != 20*time.Second {
		t.Errorf("waits %v, want [20s]", *waits)
	}
}

func TestHTTPRetryAfterPastTheRetryTimeGivesUp(t *testing.T) {
	s := newScripted(t, scripted{status: 503, header: map[string]string{"Retry-After": "120"}})
	c := httpClient(t, s.URL, false)
	waits := recordWaits(c)
	_, err := c.Export(context.Background(), []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "gave up") || len(*waits) != 0 || s.count() != 1 {
		t.Fatalf("err %v, waits %v, %d requests", err, *waits, s.count())
	}
}

func TestHTTPANonRetryableStatusIsOneAttempt(t *testing.T) {
	s := newScripted(t, scripted{status: 400, body: []byte("  bad\n request: " + strings.Repeat("z", 1000))})
	c := httpClient(t, s.URL, false)
	waits := recordWaits(c)
	_, err := c.Export(context.Background(), []byte("x"))
	var he *httpError
	if !errors.As(err, &he) || he.code != 400 {
		t.Fatalf("err %v", err)
	}
	if s.count() != 1 || len(*waits) != 0 {
		t.Errorf("%d requests, waits %v", s.count(), *waits)
	}
	if !strings.Contains(err.Error(), "400 Bad Request: bad request: zzz") || len(err.Error()) > 500 {
		t.Errorf("err %q: want the status and a short excerpt", err)
	}
}

func TestHTTPAnErrorStatusBodyIsRead(t *testing.T) {
	// google.rpc.Status{code: 3, message: "no such tenant"}
	st := append([]byte{0x08, 0x03, 0x12, 14}, "no such tenant"...)
	s := newScripted(t, scripted{status: 401, header: protobufAnswer, body: st})
	_, err := httpClient(t, s.URL, false).Export(context.Background(), []byte("x"))
	if err == nil || !strings.HasSuffix(err.Error(), "401 Unauthorized: no such tenant") {
		t.Fatalf("err %v", err)
	}
}

// The context is cancelled once the wait between attempts has started
// (the hook says so), not before: the real wait (5 s) must end on it. A
// wait that ignored ctx would retry, a second request.
func TestHTTPContextEndingDuringTheWaitEndsTheExport(t *testing.T) {
	s := newScripted(t, scripted{status: 503})
	c := httpClient(t, s.URL, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	var waitErr error // what the wait ended with; only read after Export
	c.wait = func(ctx context.Context, d time.Duration) error {
		close(started) // a second wait would panic: one is expected
		waitErr = wait(ctx, d)
		return waitErr
	}
	go func() {
		<-started
		cancel()
	}()
	_, err := c.Export(ctx, []byte("x"))
	if !errors.Is(waitErr, context.Canceled) || !errors.Is(err, context.Canceled) || s.count() != 1 {
		t.Fatalf("the wait ended with %v; err %v after %d requests", waitErr, err, s.count())
	}
}

func TestHTTPRetriesEndAfterTheRetryTime(t *testing.T) {
	s := newScripted(t, scripted{status: 502})
	c := httpClient(t, s.URL, false)
	c.retry = retryPolicy{initial: time.Millisecond, max: 2 * time.Millisecond, elapsed: 20 * time.Millisecond}
	_, err := c.Export(context.Background(), []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "gave up") || s.count() < 2 {
		t.Fatalf("err %v after %d requests", err, s.count())
	}
}

func TestAnExportAfterCloseFails(t *testing.T) {
	s := newScripted(t, scripted{status: 200})
	c := httpClient(t, s.URL, false)
	c.Close()
	if _, err := c.Export(context.Background(), []byte("x")); !errors.Is(err, errShutdown) || s.count() != 0 {
		t.Fatalf("err %v, %d requests", err, s.count())
	}
}

func TestCloseEndsAnExportInFlight(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // then the server sees the client go
		close(arrived)
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := httpClient(t, srv.URL, false)
	go func() {
		<-arrived
		c.Close()
	}()
	if _, err := c.Export(context.Background(), []byte("x")); !errors.Is(err, errShutdown) {
		t.Fatalf("err %v, want one of the shutdown", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"-1", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.v, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestHTTPAnAttemptThatTimesOutIsRetried(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			<-r.Context().Done() // until the client's attempt times out
			return
		}
		w.WriteHeader(200)
	}))
	defer srv.Close()
	c := httpClient(t, srv.URL, false)
	c.cfg.Timeout = 50 * time.Millisecond
	waits := recordWaits(c)
	if _, err := c.Export(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(*waits) != 1 {
		t.Errorf("%d requests, waits %v", n, *waits)
	}
}

// An attempt that fails on a timeout of net/http's own (the TLS
// handshake's) while the attempt's context is live reads well: no
// "%!w(<nil>)".
func TestANetHTTPTimeoutErrorHasNoNilCause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accepts, never answers the TLS handshake
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	c, err := New(Config{Signal: Traces, Protocol: HTTPProtobuf, URL: "https://" + l.Addr().String() + "/v1/traces", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.hc.Transport.(*http.Transport).TLSHandshakeTimeout = time.Millisecond // New's 10 s, shortened
	c.wait = func(context.Context, time.Duration) error { return errors.New("no retry in this test") }
	_, err = c.Export(context.Background(), []byte("x"))
	if err == nil || strings.Contains(err.Error(), "%!") {
		t.Fatalf("err %v", err)
	}
}

// An error body longer than the excerpt with a bad byte in its first
// bytes keeps its text (the bad byte shown as '?').
func TestAnExcerptKeepsTheTextAroundABadByte(t *testing.T) {
	body := append([]byte{0xff}, strings.Repeat("quota exceeded ", 30)...)
	if got := excerpt(body, 300); !strings.HasPrefix(got, "?quota exceeded") || !strings.HasSuffix(got, "…") {
		t.Errorf("excerpt %q", got)
	}
	// a rune cut in half at the end is dropped, not shown
	if got := excerpt([]byte("abé"), 3); got != "ab…" {
		t.Errorf("excerpt %q", got)
	}
}

// A request body read after its attempt ended (net/http may, when the
// answer came first) reads nothing of the bytes, which may be reused.
func TestARequestBodyIsReleasedWhenItsAttemptEnds(t *testing.T) {
	g := &bodyGate{}
	r := g.reader([]byte("abcdef"))
	p := make([]byte, 3)
	if n, err := r.Read(p); n != 3 || err != nil {
		t.Fatalf("%d, %v", n, err)
	}
	g.close()
	if n, err := r.Read(p); n != 0 || !errors.Is(err, errBodyGone) {
		t.Fatalf("after the attempt: %d, %v", n, err)
	}
}
