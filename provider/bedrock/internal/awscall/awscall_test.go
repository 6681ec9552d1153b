package awscall

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// reply is one answer of the fake service.
type reply struct {
	status    int
	errorType string // X-Amzn-ErrorType, when set
	body      string
	skew      time.Duration // the fake's clock ahead of ours, in its Date
	age       bool          // an Age header: a cached answer
	// dateLayout, when set, is the layout of the Date header in place of
	// http.TimeFormat
	dateLayout string
}

// fake answers with its replies in turn (the last again when out) and
// records each request's path, query, User-Agent and signing time.
type fake struct {
	replies []reply
	mu      sync.Mutex
	seen    []*http.Request
	signed  []time.Time
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	n := len(f.seen)
	f.seen = append(f.seen, r)
	at, _ := time.Parse(time.RFC3339, r.Header.Get("X-Test-At"))
	f.signed = append(f.signed, at)
	f.mu.Unlock()
	rp := f.replies[min(n, len(f.replies)-1)]
	layout := http.TimeFormat
	if rp.dateLayout != "" {
		layout = rp.dateLayout
	}
	w.Header().Set("Date", time.Now().Add(rp.skew).UTC().Format(layout))
	if rp.age {
		w.Header().Set("Age", "3")
	}
	if rp.errorType != "" {
		w.Header().Set("X-Amzn-ErrorType", rp.errorType)
	}
	w.WriteHeader(rp.status)
	io.WriteString(w, rp.body)
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// get is a call that GETs the target, telling the fake its signing time.
func get(skew *atomic.Int64) Call {
	return Call{Service: "svc", Operation: "Op", Path: "/op", Skew: skew,
		Request: func(ctx context.Context, target string, at time.Time) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err == nil {
				req.Header.Set("X-Test-At", at.Format(time.RFC3339))
			}
			return req, err
		}}
}

func noWait(int) time.Duration { return 0 }

// TestAttemptsAreTheStandardRetryers pins which answers are retried, as
// the SDK's standard retryer and attempt loop decide, and how many
// requests are sent.
func TestAttemptsAreTheStandardRetryers(t *testing.T) {
	ok := reply{status: 200, body: `{}`}
	for _, c := range []struct {
		name        string
		replies     []reply
		maxAttempts int
		retryable   func(string) bool
		wantErr     string // "" = success
		wantSent    int
	}{
		{"a 2xx is taken", []reply{ok}, 0, nil, "", 1},
		{"a 500 is retried", []reply{{status: 500}, ok}, 0, nil, "", 2},
		{"502, 503, 504 are retried", []reply{{status: 502}, {status: 503}, {status: 504}, ok}, 4, nil, "", 4},
		{"a 501 is not retried", []reply{{status: 501}, ok}, 0, nil, "HTTP 501", 1},
		{"a 429 without a throttling code is not retried", []reply{{status: 429, body: `{"__type":"TooManyRequestsError"}`}, ok}, 0, nil, "TooManyRequestsError", 1},
		{"a throttling code is retried whatever the status", []reply{{status: 400, body: `{"__type":"ThrottlingException"}`}, ok}, 0, nil, "", 2},
		{"a timeout code in the header is retried", []reply{{status: 400, errorType: "RequestTimeoutException"}, ok}, 0, nil, "", 2},
		{"a client error is not retried", []reply{{status: 400, body: `{"__type":"ValidationException"}`}, ok}, 0, nil, "ValidationException", 1},
		{"the default is 3 attempts", []reply{{status: 500}}, 0, nil, "after 3 attempts", 3},
		{"MaxAttempts bounds the attempts", []reply{{status: 503}}, 5, nil, "after 5 attempts", 5},
		{"MaxAttempts 1 sends once", []reply{{status: 503}, ok}, 1, nil, "HTTP 503", 1},
		{"the operation's own code is retried", []reply{{status: 400, body: `{"__type":"IDPCommunicationError"}`}, ok}, 0,
			func(code string) bool { return code == "IDPCommunicationError" }, "", 2},
		{"AccessDeniedException with the clocks an hour apart is retried", []reply{{status: 403, body: `{"__type":"AccessDeniedException"}`, skew: time.Hour}, ok}, 0, nil, "", 2},
		{"AccessDeniedException with the clocks agreeing is not", []reply{{status: 403, body: `{"__type":"AccessDeniedException"}`}, ok}, 0, nil, "AccessDeniedException", 1},
		{"a skew in a Date of another layout smithy reads is retried", []reply{{status: 403, body: `{"__type":"AccessDeniedException"}`, skew: time.Hour, dateLayout: "Mon, _2 Jan 06 15:04:05 GMT"}, ok}, 0, nil, "", 2},
		{"a skew in a cached answer is not retried", []reply{{status: 403, body: `{"__type":"AccessDeniedException"}`, skew: time.Hour, age: true}, ok}, 0, nil, "AccessDeniedException", 1},
		{"a skewed clock without a skew code is not retried", []reply{{status: 400, body: `{"__type":"ValidationException"}`, skew: time.Hour}, ok}, 0, nil, "ValidationException", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fake{replies: c.replies}
			srv := httptest.NewServer(f)
			defer srv.Close()
			call := get(nil)
			call.Retryable = c.retryable
			_, err := Client{HTTPClient: srv.Client(), Endpoint: srv.URL, MaxAttempts: c.maxAttempts, Backoff: noWait}.Do(context.Background(), call)
			if c.wantErr == "" && err != nil {
				t.Fatalf("Do: %v", err)
			}
			if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("Do: %v, want an error saying %q", err, c.wantErr)
			}
			if n := f.count(); n != c.wantSent {
				t.Errorf("sent %d requests, want %d", n, c.wantSent)
			}
		})
	}
}

// TestARetryAfterASkewIsSignedAtTheServicesTime: the attempt after a
// skew error is signed with the service's clock, and the skew is kept
// for the next call when Skew is set.
func TestARetryAfterASkewIsSignedAtTheServicesTime(t *testing.T) {
	denied := reply{status: 403, body: `{"__type":"InvalidSignatureException"}`, skew: time.Hour}
	f := &fake{replies: []reply{denied, {status: 200, skew: time.Hour}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var skew atomic.Int64
	c := Client{HTTPClient: srv.Client(), Endpoint: srv.URL, Backoff: noWait}
	for range 2 {
		if _, err := c.Do(context.Background(), get(&skew)); err != nil {
			t.Fatalf("Do: %v", err)
		}
	}
	if len(f.signed) != 3 {
		t.Fatalf("sent %d requests, want 3", len(f.signed))
	}
	for i, want := range []time.Duration{0, time.Hour, time.Hour} {
		if d := f.signed[i].Sub(time.Now().Add(want)).Abs(); d > 2*time.Minute {
			t.Errorf("request %d signed %v off the service's clock", i, d)
		}
	}
}

// TestAConnectionErrorIsRetried points the client at a closed port.
func TestAConnectionErrorIsRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close()
	var waits []int
	_, err := Client{Endpoint: endpoint, Backoff: func(n int) time.Duration {
		waits = append(waits, n)
		return 0
	}}.Do(context.Background(), get(nil))
	if err == nil || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("Do: %v, want a failure after 3 attempts", err)
	}
	if len(waits) != 2 || waits[0] != 1 || waits[1] != 2 {
		t.Errorf("waits after attempts %v, want [1 2]", waits)
	}
}

// TestTheContextEndsTheWait: cancelled in the wait before a retry, Do
// returns the context's error with one request sent.
func TestTheContextEndsTheWait(t *testing.T) {
	f := &fake{replies: []reply{{status: 500}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Client{HTTPClient: srv.Client(), Endpoint: srv.URL, Backoff: func(int) time.Duration {
		cancel()
		return time.Hour
	}}.Do(ctx, get(nil))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do: %v, want the context's end", err)
	}
	if n := f.count(); n != 1 {
		t.Errorf("sent %d requests, want 1", n)
	}
}

// TestTheRequestCarriesTheURLAndUserAgent pins the operation's URL (the
// endpoint's path joined, its query replaced) and the User-Agent.
func TestTheRequestCarriesTheURLAndUserAgent(t *testing.T) {
	f := &fake{replies: []reply{{status: 200}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	call := get(nil)
	call.Query = map[string][]string{"a": {"1 2"}}
	if _, err := (Client{HTTPClient: srv.Client(), Endpoint: srv.URL + "/base?x=1"}).Do(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	r := f.seen[0]
	if r.URL.Path != "/base/op" || r.URL.RawQuery != "a=1+2" || r.Header.Get("User-Agent") != userAgent {
		t.Errorf("sent %s?%s with User-Agent %q", r.URL.Path, r.URL.RawQuery, r.Header.Get("User-Agent"))
	}
}

// TestTheAnswerIsBounded: no more than 1 MiB of an answer is read.
func TestTheAnswerIsBounded(t *testing.T) {
	f := &fake{replies: []reply{{status: 200, body: strings.Repeat("x", maxAnswer+10)}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	body, err := Client{HTTPClient: srv.Client(), Endpoint: srv.URL}.Do(context.Background(), get(nil))
	if err != nil || len(body) != maxAnswer {
		t.Fatalf("read %d bytes (%v), want %d", len(body), err, maxAnswer)
	}
}

// TestAnEndpointThatIsNotAnAbsoluteURLIsRefused: nothing is sent.
func TestAnEndpointThatIsNotAnAbsoluteURLIsRefused(t *testing.T) {
	for _, endpoint := range []string{"", "host.example.com", "/a/path", "::"} {
		_, err := Client{Endpoint: endpoint}.Do(context.Background(), get(nil))
		if err == nil || !strings.Contains(err.Error(), "svc endpoint") {
			t.Errorf("endpoint %q: %v, want an error about the svc endpoint", endpoint, err)
		}
	}
}

// TestJoinPathIsSmithys compares the operation's path with smithy-go's
// join of an endpoint's path and the operation's.
func TestJoinPathIsSmithys(t *testing.T) {
	for _, base := range []string{"", "/", "/signin", "/signin/", "signin", "/a/b//"} {
		for _, op := range []string{"", "/", "/v1/token", "token"} {
			if got, want := joinPath(base, op), smithyhttp.JoinPath(base, op); got != want {
				t.Errorf("joinPath(%q, %q) = %q, smithy-go %q", base, op, got, want)
			}
		}
	}
}

// TestTheDefaultBackoffIsTheSDKsStandardOne pins the SDK's standard
// backoff: a random wait under 2^n seconds, 20 s from the fifth, and
// Backoff's wait when set.
func TestTheDefaultBackoffIsTheSDKsStandardOne(t *testing.T) {
	var c Client
	std := retry.NewStandard()
	for n := 1; n <= 4; n++ {
		limit := time.Duration(1<<n) * time.Second
		var longest time.Duration
		for range 200 {
			d, err := c.backoff(std, n, nil)
			if err != nil || d < 0 || d >= limit {
				t.Fatalf("after attempt %d: waits %v (%v), not in [0, %v)", n, d, err, limit)
			}
			longest = max(longest, d)
		}
		if longest < limit/4 {
			t.Errorf("after attempt %d: 200 waits all under %v: not spread up to %v", n, limit/4, limit)
		}
	}
	for _, n := range []int{5, 6, 30} {
		if d, _ := c.backoff(std, n, nil); d != 20*time.Second {
			t.Errorf("after attempt %d: waits %v, want 20s", n, d)
		}
	}
	c.Backoff = func(int) time.Duration { return 7 }
	if d, _ := c.backoff(std, 1, nil); d != 7 {
		t.Errorf("with Backoff set: waits %v, want its 7ns", d)
	}
}

// TestServiceErrorCodeAndMessageAreRead pins where an error answer's code
// and message are read from, as smithy-go's restjson1 reads them: the
// X-Amzn-ErrorType header before the body's __type, then its code (a
// string), namespaces and suffixes cut, UnknownError without; message in
// any case, else error_description; the OAuth error apart.
func TestServiceErrorCodeAndMessageAreRead(t *testing.T) {
	cases := []struct {
		name, header, body, code, message, oauth string
	}{
		{"header with a suffix", "UnauthorizedException:http://internal.amazon.com/coral/", `{"message":"m"}`, "UnauthorizedException", "m", ""},
		{"header before the body", "InvalidGrantException", `{"__type":"Other","error":"invalid_grant","error_description":"d"}`, "InvalidGrantException", "d", "invalid_grant"},
		{"__type with a namespace", "", `{"__type":"com.amazonaws.sso#TooManyRequestsException","Message":"M"}`, "TooManyRequestsException", "M", ""},
		{"__type before code", "", `{"code":"Other","__type":"RequestTimeout","message":"m"}`, "RequestTimeout", "m", ""},
		{"code when no __type", "", `{"code":"RequestTimeout","message":"m"}`, "RequestTimeout", "m", ""},
		{"a code that is not a string", "", `{"code":5,"message":"m"}`, "UnknownError", "m", ""},
		{"OAuth error only", "", `{"error":"invalid_client"}`, "UnknownError", "", "invalid_client"},
		{"message before error_description", "", `{"message":"m","error_description":"d"}`, "UnknownError", "m", ""},
		{"body not JSON", "", `<html>bad gateway</html>`, "UnknownError", "", ""},
		{"empty body", "", ``, "UnknownError", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.header != "" {
				h.Set("X-Amzn-ErrorType", c.header)
			}
			var e smithy.APIError = DecodeJSONError("sso", "GetRoleCredentials", 400, h, []byte(c.body))
			if e.ErrorCode() != c.code || e.ErrorMessage() != c.message || e.(*Error).OAuth2Error != c.oauth {
				t.Errorf("code %q message %q oauth %q, want %q %q %q", e.ErrorCode(), e.ErrorMessage(), e.(*Error).OAuth2Error, c.code, c.message, c.oauth)
			}
		})
	}
}

// TestAnErrorWithoutAStatusIsJudgedByTheAnswers: a DecodeError error
// that knows no status (an answer it cannot read) is retried by the
// answer's status, as the SDK retries a deserialization error of a 503.
func TestAnErrorWithoutAStatusIsJudgedByTheAnswers(t *testing.T) {
	f := &fake{replies: []reply{{status: 503, body: "<html>busy"}, {status: 200}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	call := get(nil)
	call.DecodeError = func(int, http.Header, []byte) error { return errors.New("not an error document") }
	if _, err := (Client{HTTPClient: srv.Client(), Endpoint: srv.URL, Backoff: noWait}).Do(context.Background(), call); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if n := f.count(); n != 2 {
		t.Errorf("sent %d requests, want 2", n)
	}
}

// TestASendErrorIsRetriedUnlessTheNameDoesNotExist pins the SDK's rule
// for a request that got no answer (smithy-go's RequestSendError): every
// send error is a connection error to the standard retryer, which retries
// it, except a DNS name that does not exist (NXDOMAIN).
func TestASendErrorIsRetriedUnlessTheNameDoesNotExist(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		tries int32
	}{
		{"a dropped connection (EOF)", io.EOF, 3},
		{"a reset connection", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, 3},
		{"a name that does not exist", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}, 1},
		{"a name not resolved for now", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "server misbehaving", Name: "x.example", IsTemporary: true}}, 3},
	} {
		var tries atomic.Int32
		hc := &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) {
			tries.Add(1)
			return nil, c.err
		})}
		_, err := Client{HTTPClient: hc, Endpoint: "https://svc.example", Backoff: noWait}.Do(context.Background(), get(nil))
		if err == nil || !errors.Is(err, c.err) {
			t.Errorf("%s: Do: %v, want the send error wrapped", c.name, err)
		}
		if n := tries.Load(); n != c.tries {
			t.Errorf("%s: %d attempts, want %d", c.name, n, c.tries)
		}
	}
}

// roundTripper is a transport that answers with a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAClientWhoseEndpointFailedSendsNothing: a client the chain made
// with the endpoint's resolution error fails every call with that error,
// before building a request.
func TestAClientWhoseEndpointFailedSendsNothing(t *testing.T) {
	resolve := errors.New("no endpoint for these settings")
	call := get(nil)
	built := 0
	request := call.Request
	call.Request = func(ctx context.Context, target string, at time.Time) (*http.Request, error) {
		built++
		return request(ctx, target, at)
	}
	_, err := Client{Err: resolve, Endpoint: "https://svc.example"}.Do(context.Background(), call)
	if !errors.Is(err, resolve) || !strings.Contains(err.Error(), "svc Op") {
		t.Errorf("Do: %v, want the resolution error, naming the call", err)
	}
	if built != 0 {
		t.Errorf("%d requests built", built)
	}
}

// TestAnEndpointsSecretIsNeitherShownNorSent: an endpoint's user
// information is not in an error (nor is an endpoint that is no URL,
// which url.Parse's error would quote) and is not sent as basic auth.
func TestAnEndpointsSecretIsNeitherShownNorSent(t *testing.T) {
	for _, endpoint := range []string{"user:s3cret@sts.example", "//user:s3cret@h/x", "https://user:s3cret@h:%zz", "https://user:s3cret@[::1"} {
		_, err := Client{Endpoint: endpoint, Backoff: noWait}.Do(context.Background(), get(nil))
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("endpoint %s: error %v", endpoint, err)
		}
	}
	f := &fake{replies: []reply{{status: 200}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	withUser := strings.Replace(srv.URL, "://", "://user:s3cret@", 1)
	if _, err := (Client{HTTPClient: srv.Client(), Endpoint: withUser, Backoff: noWait}).Do(context.Background(), get(nil)); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if auth := f.seen[0].Header.Get("Authorization"); auth != "" {
		t.Errorf("the endpoint's user information was sent: Authorization %q", auth)
	}
}
