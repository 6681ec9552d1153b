// Package send sends a request body a wire encoded, as one HTTP POST, the
// way the Stainless-generated SDKs (openai-go, anthropic-sdk-go) send it,
// without their request plumbing: the method, URL and headers are the ones
// the SDK builds for the same call, read once from it (Probe), and the
// retries before any output are the SDK's rules, written once here (Rules,
// retry.go), bounded by their count or by time (Rules.For). An answer of
// 400 or more is read whole and handed to the wire, which makes its SDK's
// error of it (Refusal), so that what the wires report is unchanged; it
// comes back inside a provider.RetriesEnded, which says why the retries
// ended there, for the agent to send the request again or not.
//
// With a gate (WithLimiter, gate.go), every attempt waits at a
// ratelimit.Limiter first — a retry-after is waited there, not slept
// here as well — and every answer is observed by it; without one,
// nothing of that runs.
//
// It owns the sending only: it must not encode or read bodies, know a
// wire's error shape (ratelimit reads a refusal for the gate), or change
// a header the SDK would send.
package send

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// Target is where and how a request goes: what the SDK's request held
// when it reached the HTTP client (Probe.Target).
type Target struct {
	Method string
	URL    *url.URL
	Host   string
	Header http.Header
}

// Refusal makes the wire's error of an answer of 400 or more: req is the
// request sent (a copy, the error's to keep and its holder's to change:
// nothing the Sender sends again shares its header or URL), res the
// answer, whose Body reads body again and whose Request is a copy too.
type Refusal func(req *http.Request, res *http.Response, body []byte) error

// retryCount is the header that numbers the attempts (0 for the first),
// which the SDKs send only while it still holds their "0".
const retryCount = "X-Stainless-Retry-Count"

// Sender posts bodies to one Target with one HTTP client and one set of
// rules. It is safe for concurrent use: the Target's header is shared,
// read only, by the first attempts of every request (copied for a client
// with a cookie jar, which adds to it).
type Sender struct {
	target  Target
	client  *http.Client
	rules   Rules
	refusal Refusal
	// count: the header numbers the attempts
	count bool
	// own: each request gets its own copy of the header, which the
	// client writes to (its cookie jar adds cookies)
	own bool
	// gate, when set, is the rate limiter every attempt waits at
	// (WithLimiter, gate.go)
	gate *ratewait.Gate
	// hooks for tests: the wait before a retry, the clock retry-after
	// dates are read against, and the jitter taken off a backoff
	sleep  func(ctx context.Context, d time.Duration) error
	now    func() time.Time
	jitter func(n int64) int64
}

// New is a Sender of t's requests through client (nil: DefaultClient's),
// with rules, making errors of refusals with refusal. With
// Rules.SameOrigin, client is copied with a transport that refuses a
// request (a redirect) that leaves t.URL's origin.
func New(t Target, client *http.Client, rules Rules, refusal Refusal) *Sender {
	if client == nil {
		client = DefaultClient()
	}
	if rules.SameOrigin {
		c := *client
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = sameOrigin{origin: t.URL, next: next}
		client = &c
	}
	return &Sender{
		target: t, client: client, rules: rules, refusal: refusal,
		count: t.Header.Get(retryCount) == "0", own: client.Jar != nil,
		sleep: sleeper(), now: time.Now, jitter: randomJitter,
	}
}

// DefaultClient is the HTTP client both SDKs make when given none: a
// clone of http.DefaultTransport that waits at most 10 minutes for an
// answer's headers (never for its body), or http.DefaultTransport itself
// when that was replaced.
func DefaultClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

// Target is the target s sends to.
func (s *Sender) Target() Target { return s.target }

// Rules are the rules s sends by.
func (s *Sender) Rules() Rules { return s.rules }

// Writes tells when net/http is done reading a body posted: it may still
// be writing a request when the answer to it comes (an answer need not
// wait for the whole request; see http.RoundTripper), so the bytes of a
// body are the transport's while an attempt is being written. net/http
// writes one attempt at a time (it retries only once the failed write has
// ended) and reads a body only between reporting the request's headers
// written and reporting the request written (httptrace's WroteHeaders and
// WroteRequest), which Writes follows. A wire that writes its next body
// into the memory of its last (prefix.Cache) checks Done first. The
// zero value is ready; a Writes follows one body.
type Writes struct {
	writing atomic.Bool
}

// Done reports whether no attempt of the body is being written: once the
// answer is read, net/http will not read the body's bytes again.
func (w *Writes) Done() bool { return !w.writing.Load() }

// Trace is ctx with a trace that follows the writes of the requests sent
// in it (every attempt of one body): Sender's PostWritten sends in it; a
// wire posting by itself sends each attempt in it.
func (w *Writes) Trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { w.writing.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { w.writing.Store(false) },
	})
}

// request is attempt n's request of b in ctx; with own, its header and
// URL are its own, for a caller to change.
func (s *Sender) request(ctx context.Context, b []byte, n int, own bool) *http.Request {
	h := s.target.Header
	if (n > 0 && s.count) || s.own || own {
		h = h.Clone()
	}
	if n > 0 && s.count {
		h.Set(retryCount, strconv.Itoa(n))
	}
	// io.NopCloser of a *bytes.Reader, a body net/http knows is in
	// memory: it writes the headers and the body in one write (any other
	// reader has the headers flushed first, a packet of their own)
	getBody := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	rc, _ := getBody()
	u := s.target.URL
	if own {
		c := *u
		u = &c
	}
	r := &http.Request{
		Method: s.target.Method, URL: u, Host: s.target.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: rc, GetBody: getBody, ContentLength: int64(len(b)),
	}
	return r.WithContext(ctx)
}

// Post sends b, retrying as the rules say, and returns the answer of the
// attempt that ended the call with its body unread (the caller closes it).
// An answer of 400 or more is the Refusal's error inside a
// *provider.RetriesEnded (its text unchanged); a connection error (the
// last attempt got no answer) is a *provider.ConnectionError, which names
// the URL, the attempts and the cause in words and wraps net/http's; a
// context done is the context's error. Before each wait for a retry, the
// observer ctx carries, if any, hears of it (provider.WithRetryNotice).
// With a gate (WithLimiter), each attempt waits at the limiter first, and
// each answer is observed by it; a retry-after is then waited at the
// limiter, told as a wait (provider.WithWaitNotice), not as a retry;
// bounded by time (Rules.For), one past the room left is told there too
// before the answer's refusal ends the retries (too long), unless the
// observer ends the context on hearing of it: its error is the call's.
func (s *Sender) Post(ctx context.Context, b []byte) (*http.Response, error) {
	return s.PostWritten(ctx, b, nil, nil)
}

// PostEach is Post with each attempt's request given to each, when not
// nil, before it is sent: its URL and header are its own, for a platform
// to route and sign it (provider/anthropic's Platform.Send); its body must
// stay b. An error of each is the attempt's, as an SDK middleware's was:
// retried as a connection error is, and, marked provider.Unsent (an
// authorization that failed) but not Final, ending the call as a
// *provider.ConnectionError when the retries end.
func (s *Sender) PostEach(ctx context.Context, b []byte, each func(*http.Request) error) (*http.Response, error) {
	return s.PostWritten(ctx, b, each, nil)
}

// PostWritten is PostEach with the writes of its attempts followed by w,
// when not nil: once the answer is read, w.Done says whether net/http is
// done with b.
func (s *Sender) PostWritten(ctx context.Context, b []byte, each func(*http.Request) error, w *Writes) (*http.Response, error) {
	return s.post(ctx, b, each, w, false)
}

// PostRead is PostEach for a whole answer: the body of the answer that
// ends the call is read inside the retries, whatever its status, as an
// SDK reads a whole answer into its type — so that one that breaks off is
// sent again as the rules say (RetryDroppedBody; without it, the read's
// error ends the call), and each attempt, its body read, is bounded by
// Rules.AttemptTimeout. The answer returned holds its body read (the
// caller closes it all the same).
func (s *Sender) PostRead(ctx context.Context, b []byte, each func(*http.Request) error) (*http.Response, error) {
	return s.post(ctx, b, each, nil, true)
}

// post is PostWritten, reading the body of every answer that ends the
// call (whole) or of its refusals only.
func (s *Sender) post(ctx context.Context, b []byte, each func(*http.Request) error, w *Writes, whole bool) (*http.Response, error) {
	var (
		req *http.Request
		res *http.Response
		err error
		// sent: the last attempt's error, if any, is the HTTP client's
		// (not each's); reached: some attempt got past connecting
		sent, reached bool
	)
	if w != nil {
		ctx = w.Trace(ctx)
	}
	var key ratelimit.Key
	if s.gate != nil {
		key = s.limitKey(ctx)
	}
	var first time.Time     // when the first attempt was sent: For counts from it
	var bound time.Duration // For, cut to the context's retry deadline
	var (
		// long: the last answer's error, whose retry-after was past
		// what was left of the bound, while its wait goes to the gate
		// bounded by limit (the limiter's time the bound ends at)
		long  error
		limit time.Time
	)
	before := provider.AttemptsBefore(ctx) // the request's attempts in earlier sends
	for n := 0; ; n++ {
		var pass ratewait.Pass // the attempt let through the gate, if any
		if s.gate != nil {
			pass, err = s.gate.WaitUntil(ctx, key, before+n+1, provider.Redact(s.target.URL), limit)
			if err != nil {
				if long != nil && ctx.Err() == nil && errors.Is(err, ratewait.ErrPastLimit) {
					// the wait, told, would end past the bound: the
					// answer that asked for it ends the retries
					return nil, long
				}
				return nil, err
			}
			long, limit = nil, time.Time{}
		}
		if n == 0 {
			first = s.now()
			bound = provider.RetryBound(ctx, s.rules.For, first)
		}
		actx, stop := ctx, context.CancelFunc(func() {})
		if whole && s.rules.AttemptTimeout > 0 {
			// the attempt's own bound, its answer read inside it
			actx, stop = context.WithTimeout(ctx, s.rules.AttemptTimeout)
		}
		req = s.request(actx, b, n, each != nil)
		sent = false
		if each == nil {
			res, err = s.client.Do(req)
			sent = true
		} else if err = each(req); err == nil {
			res, err = s.client.Do(req)
			sent = true
		}
		reached = reached || (sent && !provider.Unconnected(err))
		if !sent || provider.Unconnected(err) {
			// no answer is coming (nothing left, or the attempt's
			// authorization failed): the limiter holds nothing for it
			pass.Unreached()
		}
		retry := s.rules.retryable(res, err)
		next := s.pause(res, n, s.now().Sub(first), bound, retry)
		var read []byte
		var readErr error
		readNow := err == nil && res != nil && !next.again && (whole || res.StatusCode >= http.StatusBadRequest)
		if readNow {
			read, readErr = s.read(res)
		}
		if (err != nil || readErr != nil) && ctx.Err() == nil && actx.Err() != nil {
			// Only the attempt's own bound ran out: a connection's error,
			// retried whatever the answer said (as the SDK retried it),
			// and not the caller's deadline, which the agent's resend
			// would not outlive.
			closeBody(res)
			res, read, readNow, readErr = nil, nil, false, nil
			err = &AttemptTimedOut{After: s.rules.AttemptTimeout}
			retry = s.rules.retryable(nil, err)
			next = s.pause(nil, n, s.now().Sub(first), bound, retry)
		}
		if err == nil && res != nil {
			body := read // nil: an error answer not read here is peeked at
			if readNow && body == nil {
				body = []byte{} // read, or failed to be: nothing to peek at
			}
			if res.StatusCode < http.StatusBadRequest {
				body = nil // a whole answer says nothing more to the limiter than its headers
			}
			pass.Observe(res, body)
		}
		stop() // a whole answer is read, or will not be
		if ctx.Err() != nil {
			closeBody(res)
			return nil, ctx.Err()
		}
		if readErr != nil {
			if !s.rules.RetryDroppedBody {
				return nil, readErr
			}
			// retried as a connection error is, unless the answer
			// said not to, while the bound allows
			err = readErr
			next = s.pause(res, n, s.now().Sub(first), bound, droppedRetryable(res))
		}
		if !next.again {
			if provider.IsFinal(err) {
				// no attempt again can mend it: not a connection's error,
				// which the agent would send the request again for —
				// unless an earlier attempt was written, which the error
				// must not deny (Transient still says no: it is final)
				if reached {
					return nil, &provider.ConnectionError{URL: provider.Redact(req.URL), Attempts: before + n + 1, Reached: true, Err: err}
				}
				return nil, err
			}
			if err != nil && (sent || provider.Unconnected(err)) && readErr == nil {
				// no answer: the HTTP client's error, or each's failure
				// to authorize the attempt (its credentials or token
				// could not be had, for a reason another attempt may
				// mend: a refusal is final) — a connection's error
				// either way, which the agent sends the request again
				// for as it would the provider's own blip
				return nil, &provider.ConnectionError{URL: provider.Redact(req.URL), Attempts: before + n + 1, Reached: reached, Err: err}
			}
			if err != nil {
				return nil, err
			}
			if res.StatusCode >= http.StatusBadRequest {
				res.Body = io.NopCloser(bytes.NewReader(read))
				ended := next.ended(s.refusal(handed(req, res), res, read), retry)
				if s.gate == nil || s.rules.For <= 0 || !next.tooLong {
					return nil, ended
				}
				// Bounded by time, with a gate: the retry-after past
				// what is left of the bound is the limiter's wait like
				// any other, told before it is given up when it ends
				// past the room left (what is left of the bound, or
				// RetryAfterLimit when less), so that an observer
				// handing a long wait over hears of it.
				long = ended
				limit = s.gate.Now().Add(min(next.room, bound-s.now().Sub(first)))
				continue
			}
			if readNow {
				res.Body = io.NopCloser(bytes.NewReader(read))
			}
			return res, nil
		}
		closeBody(res)
		if s.gate != nil && next.asked && next.wait > 0 {
			// The limiter holds the same retry-after, counted from when
			// the answer was read: the next attempt waits it there, told
			// as a wait (provider.WaitNotice), not slept here as well.
			continue
		}
		s.notice(ctx, req, res, err, before, n, next.wait)
		if err := s.sleep(ctx, next.wait); err != nil {
			return nil, err
		}
	}
}

// AttemptTimedOut is the error of an attempt of PostRead that ran out of
// Rules.AttemptTimeout while its caller's context was still live: a
// connection's error (retried; a ConnectionError wraps the last), and not
// a context's (it does not unwrap to context.DeadlineExceeded, so that
// provider.Transient calls it transient).
type AttemptTimedOut struct{ After time.Duration }

// Error says how long the attempt had.
func (e *AttemptTimedOut) Error() string {
	return fmt.Sprintf("no answer read within the attempt's %v", e.After)
}

// handed is the request of a refusal, for the Refusal to keep in its
// error (which its holder may change: a log's redaction deletes the
// Authorization header): a copy of req, whose header and URL are its own
// and not the Target's, which the first attempts of every request share
// and must not change; res.Request is made that copy too, or a copy of
// its own when the client sent another (a redirect's, or a shallow copy
// sharing the header).
func handed(req *http.Request, res *http.Response) *http.Request {
	sent := req.Clone(req.Context())
	switch {
	case res.Request == req:
		res.Request = sent
	case res.Request != nil:
		res.Request = res.Request.Clone(res.Request.Context())
	}
	return sent
}

// notice tells ctx's observer (provider.WithRetryNotice) that attempt n
// of this send (0 for its first; numbered after the before attempts of
// earlier sends, provider.AttemptsBefore), which got res or err, is
// followed by another after d.
func (s *Sender) notice(ctx context.Context, req *http.Request, res *http.Response, err error, before, n int, d time.Duration) {
	rn := provider.RetryNotice{Attempt: before + n + 2, Attempts: before + s.rules.MaxRetries + 1, Wait: d, URL: provider.Redact(req.URL), Err: err}
	if s.rules.For > 0 {
		rn.Attempts, rn.For = 0, s.rules.For
	}
	if err == nil && res != nil {
		rn.Status = res.StatusCode
	}
	provider.NoticeRetry(ctx, rn)
}

// read reads res's body whole and closes it. Its error is the SDK's:
// anthropic-sdk-go's (RetryDroppedBody) says what failed, openai-go's is
// io.ReadAll's.
func (s *Sender) read(res *http.Response) ([]byte, error) {
	b, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil && s.rules.RetryDroppedBody {
		return nil, fmt.Errorf("error reading response body: %w", err)
	}
	return b, err
}

// closeBody closes res's body, if there is one.
func closeBody(res *http.Response) {
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
}

// Sleep waits d, or until ctx is done, and then returns ctx's error (at
// once when ctx is done already): the one pause of every retry and
// backoff, the wires' and the agent's.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errOrigin is openai-go's error for a request that leaves the base URL's
// origin (a redirect elsewhere): never retried.
var errOrigin = provider.Final(errors.New("requestconfig: request URL origin must match the configured base URL"))

// sameOrigin is a transport that sends only requests to origin (scheme,
// host and port) with no other target in them, as openai-go's does.
type sameOrigin struct {
	origin *url.URL
	next   http.RoundTripper
}

// RoundTrip sends r when it stays at the origin.
func (t sameOrigin) RoundTrip(r *http.Request) (*http.Response, error) {
	if !canonical(r) || !originsMatch(r.URL, t.origin) {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, errOrigin
	}
	return t.next.RoundTrip(r)
}

// canonical reports whether r has no target but its URL's.
func canonical(r *http.Request) bool {
	if r == nil || r.URL == nil || r.URL.Opaque != "" || r.RequestURI != "" {
		return false
	}
	return r.Host == "" || originsMatch(&url.URL{Scheme: r.URL.Scheme, Host: r.Host}, r.URL)
}

// With is a Sender like s (its client, rules, refusal and gate) of t's
// requests: for a wire whose headers change with a setting.
func (s *Sender) With(t Target) *Sender {
	c := *s
	c.target = t
	c.count = t.Header.Get(retryCount) == "0"
	return &c
}
