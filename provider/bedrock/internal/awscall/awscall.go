// Package awscall is one call to an AWS service's HTTP API as the SDK's
// service clients make it, for the credential providers of the bedrock
// provider's AWS chain (awssso, awslogin, awssts): the operation's URL
// joined to the endpoint the chain resolved, attempts and waits as the
// SDK's standard retryer decides them (with the clock-skew retry of the
// SDK's attempt loop), a bounded answer, and the restJson services'
// error as one smithy.APIError.
//
// It must not resolve endpoints or regions (awsendpoint and the chain
// do), read the environment (but AWS_NEW_RETRIES_2026, the SDK retry
// package's own switch, read at each retry as that package reads it) or
// the shared files, hold credentials, or know an operation's input and
// output: its callers build the request and read the answer. It must not import the SDK's config, credentials
// providers or service packages, and must not put a request's body or
// headers (tokens, keys) in an error.
package awscall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/myelin-run/myelin/internal/send"
)

// Client is how to reach one AWS service: its endpoint, its HTTP client
// and its retry policy. The chain fills it; the zero HTTPClient,
// MaxAttempts and Backoff are the SDK's defaults. It holds no
// credentials.
type Client struct {
	// Err, when set, is why the chain could not resolve the service's
	// endpoint: every call fails with it, wrapped, before sending. The
	// chain hands such a client to a provider that may never call (an
	// unexpired cached token or credentials need no refresh), so that, as
	// with the SDK, which resolves an endpoint only when it sends, only a
	// call fails.
	Err error
	// HTTPClient sends the requests; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Endpoint is the service's base URL as the chain resolved it; the
	// operation's path is joined to its path, its query is dropped, as
	// the SDK's clients do.
	Endpoint string
	// MaxAttempts is how many times a request is sent at most, the first
	// included; 0 or less is the SDK's default, 3.
	MaxAttempts int
	// Backoff is the wait before the attempt after failed attempt n
	// (1-based); nil is the SDK's standard retryer's exponential backoff
	// with jitter, at most 20 seconds. Tests set it to return 0.
	Backoff func(n int) time.Duration
}

// Call is one operation: what the errors call it, where it goes, how to
// build its request and read its refusals, and what it retries besides
// the standard retryer's errors.
type Call struct {
	// Service and Operation name the call in errors ("sso",
	// "GetRoleCredentials").
	Service, Operation string
	// Path is joined to the endpoint's path; Query, when set, is the
	// URL's query.
	Path  string
	Query url.Values
	// Request builds one attempt's request to target, the operation's
	// URL. A signed operation signs it as of at: this machine's clock
	// plus the clock skew the service's Date showed (see Skew). Its error
	// is judged as the SDK judges an error of its signing step.
	Request func(ctx context.Context, target string, at time.Time) (*http.Request, error)
	// DecodeError makes the error of an answer whose status is not 2xx
	// from its status, header and (bounded) body; nil is DecodeJSONError,
	// the restJson services'. An error with an ErrorCode() is judged by
	// its code as well as by the status.
	DecodeError func(status int, header http.Header, body []byte) error
	// Retryable says which error codes this operation retries besides
	// the standard retryer's (stscreds' InvalidIdentityToken); nil none.
	Retryable func(code string) bool
	// Skew, when set, keeps the service's clock minus this machine's (in
	// nanoseconds) from one call to the next, as an SDK client keeps it;
	// nil starts every call at none.
	Skew *atomic.Int64
}

// userAgent is the User-Agent of every request.
const userAgent = "myelin (aws credentials)"

// maxAnswer bounds the bytes read of an answer.
const maxAnswer = 1 << 20

// skewThreshold is how far the service's clock must be from the one a
// request was signed with for a clock-skew error code to be retried.
const skewThreshold = 4 * time.Minute

// Do makes the call, retrying as the SDK's standard retryer would, and
// returns the body of a 2xx answer. It stops when ctx is done, returning
// ctx's error wrapped. An error after retries says how many attempts
// were made. With c.Err set it sends nothing and returns c.Err wrapped.
func (c Client) Do(ctx context.Context, call Call) ([]byte, error) {
	if c.Err != nil {
		return nil, fmt.Errorf("%s %s: not sent: %w", call.Service, call.Operation, c.Err)
	}
	target, err := c.url(call)
	if err != nil {
		return nil, err
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	std := retry.NewStandard()
	attempts := c.MaxAttempts
	if attempts <= 0 {
		attempts = std.MaxAttempts()
	}
	var skew time.Duration
	if call.Skew != nil {
		skew = time.Duration(call.Skew.Load())
	}
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s %s: not sent: %w", call.Service, call.Operation, err)
		}
		a := c.attempt(ctx, hc, call, target, skew)
		skewed := a.skewSeen && (a.skew-skew > skewThreshold || skew-a.skew > skewThreshold)
		// As the SDK: the next attempt is signed with the skew this one
		// saw (none without a Date).
		skew = a.skew
		body, err := c.next(ctx, std, call, a, n, attempts, skewed)
		if body != nil || err != nil {
			// The last attempt's skew is kept for the next call.
			if a.skewSeen && call.Skew != nil {
				call.Skew.Store(int64(a.skew))
			}
			return body, err
		}
	}
}

// next says what follows attempt n: its body, the call's error, or
// neither when the wait before attempt n+1 is over.
func (c Client) next(ctx context.Context, std *retry.Standard, call Call, a result, n, attempts int, skewed bool) ([]byte, error) {
	if a.err == nil {
		if a.body == nil {
			return []byte{}, nil
		}
		return a.body, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", call.Service, call.Operation, err)
	}
	if !retryable(std, call, a, skewed) {
		return nil, a.err
	}
	if n >= attempts {
		return nil, fmt.Errorf("after %d attempts: %w", n, a.err)
	}
	wait, err := c.backoff(std, n, a.err)
	if err != nil {
		return nil, fmt.Errorf("%s %s: backoff: %w", call.Service, call.Operation, err)
	}
	if err := send.Sleep(ctx, wait); err != nil {
		return nil, fmt.Errorf("%s %s: waiting to retry after attempt %d: %w", call.Service, call.Operation, n, err)
	}
	return nil, nil
}

// url is the operation's URL: the endpoint's scheme and host, its path
// and the operation's joined as smithy-go joins them, the call's query.
func (c Client) url(call Call) (string, error) {
	if c.Endpoint == "" {
		return "", fmt.Errorf("%s %s: no %s endpoint (is the region set?)", call.Service, call.Operation, call.Service)
	}
	// Neither the endpoint nor url.Parse's error (which quotes it) is
	// shown: its user information may be a secret.
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("%s %s: the %s endpoint is not an absolute URL (not shown: it may hold a secret)", call.Service, call.Operation, call.Service)
	}
	// As the SDK: the endpoint's scheme, host and path only (its user
	// information would be sent as basic auth by net/http).
	u.User = nil
	u.Path, u.RawPath = joinPath(u.Path, call.Path), ""
	u.RawQuery, u.Fragment = "", ""
	if call.Query != nil {
		u.RawQuery = call.Query.Encode()
	}
	return u.String(), nil
}

// joinPath joins an endpoint's path and an operation's as smithy-go
// does: a leading slash, one slash between them.
func joinPath(base, op string) string {
	if !strings.HasPrefix(base, "/") {
		base = "/" + base
	}
	op = strings.TrimPrefix(op, "/")
	if op != "" && base != "/" && !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base + op
}

// result is what one attempt gave: the body of a 2xx answer or an
// error, the answer's status (0 when none came), and the clock skew the
// answer's Date showed, if it showed one.
type result struct {
	body     []byte
	err      error
	status   int
	skew     time.Duration
	skewSeen bool
}

// attempt sends the request once, built as of this clock plus skew.
func (c Client) attempt(ctx context.Context, hc *http.Client, call Call, target string, skew time.Duration) (r result) {
	req, err := call.Request(ctx, target, time.Now().UTC().Add(skew))
	if err != nil {
		r.err = fmt.Errorf("%s %s: %w", call.Service, call.Operation, err)
		return r
	}
	req.Header.Set("User-Agent", userAgent)
	sent := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		// A *url.Error: it says the method and the URL.
		r.err = fmt.Errorf("%s %s: %w", call.Service, call.Operation, sendError{err})
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	r.skew, r.skewSeen = clockSkew(resp.Header, sent, time.Now())
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		r.err = fmt.Errorf("%s %s: reading the answer (HTTP %d): %w", call.Service, call.Operation, resp.StatusCode, err)
		return r
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		decode := call.DecodeError
		if decode == nil {
			decode = func(status int, h http.Header, body []byte) error {
				return DecodeJSONError(call.Service, call.Operation, status, h, body)
			}
		}
		r.err = decode(resp.StatusCode, resp.Header, body)
		return r
	}
	r.body = body
	return r
}

// retryable is the SDK's verdict on a failed attempt: a clock-skew code
// with the clocks apart, the operation's own codes, then the standard
// retryer's judgement (connection errors, 500/502/503/504, throttling and
// timeout codes) of the error with the answer's status.
func retryable(std *retry.Standard, call Call, a result, skewed bool) bool {
	var coded interface{ ErrorCode() string }
	if errors.As(a.err, &coded) {
		if skewed && clockSkewCode(coded.ErrorCode()) {
			return true
		}
		if call.Retryable != nil && call.Retryable(coded.ErrorCode()) {
			return true
		}
	}
	judged := a.err
	if a.status != 0 {
		judged = statusError{a.status, a.err}
	}
	return std.IsErrorRetryable(judged)
}

// clockSkewCode reports whether the SDK's attempt loop retries this error
// code when the service's clock and the signing one are more than
// skewThreshold apart.
func clockSkewCode(code string) bool {
	switch code {
	case "InvalidSignatureException", "SignatureDoesNotMatch", "AuthFailure",
		"RequestTimeTooSkewed", "AccessDeniedException":
		return true
	}
	return false
}

// clockSkew is how far ahead of this machine's clock the service's was,
// from the answer's Date, against the middle of the exchange (sent to
// got); as the SDK, none from a cached answer (with an Age) or an
// exchange slower than 15 minutes.
func clockSkew(h http.Header, sent, got time.Time) (time.Duration, bool) {
	date, err := smithyhttp.ParseTime(h.Get("Date")) // the layouts the SDK reads
	if err != nil || h.Get("Age") != "" {
		return 0, false
	}
	elapsed := got.Sub(sent)
	if elapsed > 15*time.Minute {
		return 0, false
	}
	return date.Sub(sent.Add(elapsed / 2)), true
}

// backoff is the wait before the attempt after failed attempt n: Backoff's,
// else the standard retryer's (whose AWS_NEW_RETRIES_2026 mode counts
// retries from 0, as the SDK's attempt loop passes them).
func (c Client) backoff(std *retry.Standard, n int, err error) (time.Duration, error) {
	if c.Backoff != nil {
		return c.Backoff(n), nil
	}
	if os.Getenv("AWS_NEW_RETRIES_2026") == "true" {
		n--
	}
	return std.RetryDelay(n, err)
}

// sendError is a request that got no answer; as smithy-go's
// RequestSendError it is a connection error to the retryer (but a name
// that does not exist).
type sendError struct{ err error }

func (e sendError) Error() string         { return e.err.Error() }
func (e sendError) Unwrap() error         { return e.err }
func (e sendError) ConnectionError() bool { return true }

// statusError lends an attempt's error its answer's status, for the
// retryer's judgement only.
type statusError struct {
	status int
	err    error
}

func (e statusError) Error() string       { return e.err.Error() }
func (e statusError) Unwrap() error       { return e.err }
func (e statusError) HTTPStatusCode() int { return e.status }
