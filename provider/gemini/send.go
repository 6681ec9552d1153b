package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// This file sends a request as genai's own generateContent and
// streamGenerateContent calls do (genai v1.79.1, api_client.go and
// common.go): the same URL, the same headers, the same retries, written
// here so that genai is not linked; TestTheWireSendsWhatTheSDKSends holds
// the two to the same request.

// sdkLabel names the client in the user agent and x-goog-api-client as
// genai v1.79.1 names itself (appendSDKHeaders): the requests are the
// ones that version sends, byte for byte, and the test that compares them
// fails when go.mod's genai moves on without this.
const sdkLabel = "google-genai-sdk/1.79.1"

// sdkHeaders are the headers genai sends on a generateContent call of the
// Gemini API with key: its user agent and x-goog-api-client (genai's
// version and the Go runtime's), the content type and the key.
// x-server-timeout, which depends on each call's deadline, is left out
// (post sets it).
func sdkHeaders(key string) http.Header {
	client := sdkLabel + " gl-go/" + runtime.Version()
	return http.Header{
		"User-Agent":        {client},
		"X-Goog-Api-Client": {client},
		"Content-Type":      {"application/json"},
		"X-Goog-Api-Key":    {key},
	}
}

// endpoint is where and how the wire sends: the base URL and API
// version, genai's headers, the client and the retry policy.
type endpoint struct {
	base    *url.URL
	version string
	headers http.Header
	client  *http.Client
	retry   *retryPolicy // nil: one attempt
	// gate, with Config.Limiter, is the rate limiter every attempt waits
	// at and every answer is observed by (do); nil without
	gate *ratewait.Gate
}

// modelPath is the model's resource name as genai writes it in the path
// (tModel): "models/NAME", unless it already names models/ or
// tunedModels/. A name that is empty or holds "?", "&" or ".." is an
// error, as genai refuses it.
func modelPath(model string) (string, error) {
	if model == "" {
		return "", fmt.Errorf("gemini: the request names no model")
	}
	if strings.Contains(model, "?") || strings.Contains(model, "&") || strings.Contains(model, "..") {
		return "", fmt.Errorf("gemini: the model name %q holds \"?\", \"&\" or \"..\"", model)
	}
	if strings.HasPrefix(model, "models/") || strings.HasPrefix(model, "tunedModels/") {
		return model, nil
	}
	return "models/" + model, nil
}

// url is the address of model's method (generateContent, or
// streamGenerateContent with alt=sse when stream), as genai's
// createAPIURL makes it for the Gemini API.
func (e *endpoint) url(model string, stream bool) (string, error) {
	path, err := modelPath(model)
	if err != nil {
		return "", err
	}
	if stream {
		path += ":streamGenerateContent"
	} else {
		path += ":generateContent"
	}
	if !strings.Contains(path, "/"+e.version+"/") {
		path = e.version + "/" + path
	}
	u := e.base.JoinPath(path)
	if stream {
		u.RawQuery = "alt=sse"
	}
	return u.String(), nil
}

// post sends body to address, retrying as the policy says, and returns
// the first answer of status 2xx; another status is the API's error
// (apiError) with its message, a failure to send is that failure.
func (e *endpoint) post(ctx context.Context, address string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, address, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	req.Header = e.headers.Clone()
	if t := serverTimeout(ctx, e.client.Timeout); t > 0 {
		req.Header.Set("X-Server-Timeout", strconv.FormatInt(int64(math.Ceil(t.Seconds())), 10))
	}
	resp, err := e.retry.do(req, e.gate, e.client.Do)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, describe(apiError(resp))
	}
	return resp, nil
}

// serverTimeout is the time genai announces in x-server-timeout: the
// nearer of the client's timeout and the context's deadline, 0 for none.
func serverTimeout(ctx context.Context, client time.Duration) time.Duration {
	t := client
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left != 0 && (t == 0 || left < t) {
			t = left
		}
	}
	return t
}

// maxErrorBody bounds what is read of an error answer's body: an error
// object is small, and a proxy's page must not fill memory.
const maxErrorBody = 1 << 20

// apiError is the error an answer of a status other than 2xx says, read
// as genai reads it (newAPIError): the body's "error" object, else the
// body as the message, else the status alone.
func apiError(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return fmt.Errorf("%d %s, and its body could not be read: %w", resp.StatusCode, http.StatusText(resp.StatusCode), err)
	}
	if len(body) == 0 {
		return APIError{Code: resp.StatusCode, Status: resp.Status}
	}
	var v struct {
		Error *APIError `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && v.Error != nil {
		return *v.Error
	}
	return APIError{Code: resp.StatusCode, Status: resp.Status, Message: string(body)}
}

// retryPolicy is the wire's retries before any output (Config.MaxRetries,
// Config.RetryFor, Config.RetryDelay), with genai's rules
// (HTTPRetryOptions, retryHTTPRequest): an attempt is repeated on a
// failure to send or one of the statuses, after initial·2^(n-1) plus up
// to jitter, at most a minute — at most attempts in all, or, with
// retryFor, while the time since the first attempt with the wait before
// the next is within it. It must not retry once a 2xx answer came: the
// output has begun.
type retryPolicy struct {
	attempts int           // in all, the first included; at least 1 (without retryFor)
	retryFor time.Duration // when above 0, the bound in time in place of attempts
	statuses []int32       // the statuses retried
	initial  float64       // seconds before the first retry
	jitter   float64       // seconds, at most, added at random to each wait
	// hooks for tests: the wait before a retry, and the clock the bound
	// is kept by when there is no limiter (nil: the real ones)
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

// maxRetryDelay is the longest wait between two attempts, genai's.
const maxRetryDelay = 60.0

// delay is the wait after the attempt-th attempt (from 1).
func (r *retryPolicy) delay(attempt int) time.Duration {
	s := r.initial*math.Pow(2, float64(attempt-1)) + rand.Float64()*r.jitter
	s = max(0, min(s, maxRetryDelay))
	return time.Duration(s * float64(time.Second))
}

// last reports whether the attempt-th attempt (from 1), begun since
// start, is the last one when the next would follow it after wait.
func (r *retryPolicy) last(attempt int, elapsed, wait, bound time.Duration) bool {
	switch {
	case r == nil:
		return true
	case r.retryFor > 0:
		return elapsed+wait > bound
	}
	return attempt >= r.attempts
}

// do sends req through send, again while the policy says; a nil policy
// sends once. Each attempt sends the whole body again (GetBody). With a
// gate (g, Config.Limiter), each attempt waits at the limiter first and
// each answer is observed by it (internal/ratewait), and a wait an
// answer asked for (a retry-after, a RetryInfo) is waited at the limiter
// before the next attempt — told as a provider.WaitNotice — not here;
// bounded by time, one that would end past the bound is told there, then
// given up, the answer that asked for it ending the call.
// Before each wait of its own (a backoff) the observer req's context
// carries, if any, hears of the retry (provider.WithRetryNotice); a last
// attempt that got no answer is a *provider.ConnectionError.
func (r *retryPolicy) do(req *http.Request, g *ratewait.Gate, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	attempts := 1
	if r != nil {
		attempts = r.attempts
		if r.retryFor > 0 {
			attempts = 0 // bounded by time: how many is not known
		}
	}
	ctx := req.Context()
	clock := r.clock(g)
	start := clock()
	var bound time.Duration // retryFor, cut to the context's retry deadline
	if r != nil {
		bound = provider.RetryBound(ctx, r.retryFor, start)
	}
	var key ratelimit.Key
	if g != nil {
		key = g.Key(ctx, req.URL)
	}
	reached := false
	var (
		// long: the last answer, whose wait asked for ended past the
		// bound, while that wait goes to the gate bounded by limit
		long  *http.Response
		limit time.Time
	)
	before := provider.AttemptsBefore(ctx) // the request's attempts in earlier sends
	if attempts > 0 {
		attempts += before // the bound, numbered as the attempts are
	}
	for n := 1; ; n++ {
		// the gate: the limiter's wait before the attempt, its reading
		// of the answer after (internal/ratewait)
		pass, err := g.WaitUntil(ctx, key, before+n, provider.Redact(req.URL), limit)
		if long != nil {
			if err != nil && ctx.Err() == nil && errors.Is(err, ratewait.ErrPastLimit) {
				// the wait, told, would end past the bound: the answer
				// that asked for it ends the retries
				return long, nil
			}
			long.Body.Close()
			long, limit = nil, time.Time{}
		}
		if err != nil {
			return nil, err
		}
		resp, err := send(req)
		var asked time.Duration // the wait the answer asked for, read with a gate
		if err == nil {
			if o := pass.Observe(resp, nil); g != nil {
				asked = o.Wait(o.At)
			}
		}
		reached = reached || !provider.Unconnected(err)
		if provider.Unconnected(err) {
			pass.Unreached() // no answer is coming: the limiter holds nothing for it
		}
		if err == nil && (r == nil || !slices.Contains(r.statuses, int32(resp.StatusCode))) {
			return resp, nil
		}
		if provider.IsFinal(err) {
			// no attempt again can mend it (an authorization refused by
			// the caller's transport): not retried, not a connection's
			return nil, err
		}
		// with a limiter, a wait the answer asked for is the limiter's
		atLimiter := g != nil && asked > 0
		wait := asked
		if !atLimiter {
			wait = r.delayOrZero(n)
		}
		if atLimiter && r != nil && r.retryFor > 0 && r.last(n, clock().Sub(start), wait, bound) && ctx.Err() == nil {
			// Bounded by time, with a gate: a wait asked for past the
			// bound is the limiter's like any other, told before it is
			// given up, so that an observer handing a long wait over
			// (serve --worker) hears of it. The answer, its body
			// unread, is the call's if the gate gives up.
			body, berr := req.GetBody()
			if berr != nil {
				resp.Body.Close()
				return nil, berr
			}
			req.Body = body
			long, limit = resp, start.Add(bound)
			continue
		}
		if ctx.Err() != nil {
			// cancelled during the attempt or as its answer came, with
			// retries to follow: the call ends with the context's error,
			// whichever came first (as internal/send's), not with an
			// answer that would have been retried
			if resp != nil {
				resp.Body.Close()
			}
			return nil, ctx.Err()
		}
		if r.last(n, clock().Sub(start), wait, bound) {
			if err != nil {
				err = &provider.ConnectionError{URL: provider.Redact(req.URL), Attempts: before + n, Reached: reached, Err: err}
			}
			return resp, err
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		body, berr := req.GetBody()
		if berr != nil {
			return nil, berr
		}
		req.Body = body
		if atLimiter {
			continue // the next attempt waits at the limiter, and says so
		}
		provider.NoticeRetry(ctx, provider.RetryNotice{Attempt: before + n + 1, Attempts: attempts, Wait: wait, URL: provider.Redact(req.URL), Status: status, Err: err})
		if err := r.wait(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// delayOrZero is delay, 0 on a nil policy (which never waits).
func (r *retryPolicy) delayOrZero(attempt int) time.Duration {
	if r == nil {
		return 0
	}
	return r.delay(attempt)
}

// clock is the time the bound is kept by: the limiter's with a gate (so
// that a limiter's clock in a test keeps both), else the hook's, else
// the real one.
func (r *retryPolicy) clock(g *ratewait.Gate) func() time.Time {
	switch {
	case g != nil:
		return g.Now
	case r != nil && r.now != nil:
		return r.now
	}
	return time.Now
}

// wait waits d, or until ctx is done (its error then).
func (r *retryPolicy) wait(ctx context.Context, d time.Duration) error {
	if r.sleep != nil {
		return r.sleep(ctx, d)
	}
	return send.Sleep(ctx, d)
}
