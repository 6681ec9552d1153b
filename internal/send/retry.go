package send

import (
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/myelin-run/myelin/provider"
)

// Rules are the SDK's retry rules, which the two SDKs share but for the
// few points their fields name. An attempt is repeated, before any output
// and at most MaxRetries times (or, with For, for at most For), after a
// connection error and after an answer of 408, 409, 429 or 500 and more —
// unless the answer's x-should-retry header says "false", and always when
// it says "true". The wait before attempt n+1 is the answer's
// retry-after-ms (milliseconds) or retry-after (seconds, or an HTTP
// date), else 0.5 s·2ⁿ, at most 8 s, less a random quarter of it at most
// (Backoff). A context done ends the call at once.
type Rules struct {
	// MaxRetries is how many times an attempt may be repeated.
	MaxRetries int
	// RetryAfterLimit, when above 0, is the longest wait a retry-after
	// header may ask for: a longer one ends the retries with the answer
	// that asked, and a negative or not-a-number count is not read
	// (openai-go, 2 minutes). At 0 any count read is waited, a negative
	// one as no wait (anthropic-sdk-go).
	RetryAfterLimit time.Duration
	// RetryDroppedBody retries, as a connection error, an error answer
	// whose body breaks off while it is read (anthropic-sdk-go);
	// without it the read's error ends the call (openai-go).
	RetryDroppedBody bool
	// SameOrigin refuses, and never retries, a request (a redirect) that
	// leaves the URL's scheme, host and port (openai-go).
	SameOrigin bool
	// For, when above 0, bounds the retries by time instead of by
	// MaxRetries: an attempt is repeated while the time since the first
	// attempt, with the wait before the next, is within For (issue 32
	// point 3, docs/ratelimits.md "Retries"). 0: MaxRetries bounds them.
	For time.Duration
	// AttemptTimeout, when above 0, bounds each attempt of PostRead —
	// its answer read whole — as anthropic-sdk-go bounded each attempt of
	// a whole answer (ten minutes, the X-Stainless-Timeout it sent): one
	// that runs out is retried as a connection error is, unless it was the
	// last. 0: no bound but the caller's context.
	AttemptTimeout time.Duration
}

// OpenAI are openai-go's rules (v3.102.0, internal/requestconfig), with
// maxRetries retries.
func OpenAI(maxRetries int) Rules {
	return Rules{MaxRetries: maxRetries, RetryAfterLimit: 2 * time.Minute, SameOrigin: true}
}

// Anthropic are anthropic-sdk-go's rules (v2.17.0,
// internal/requestconfig), with maxRetries retries.
func Anthropic(maxRetries int) Rules {
	return Rules{MaxRetries: maxRetries, RetryDroppedBody: true}
}

// maxBackoff is the longest wait of the backoff.
const maxBackoff = 8 * time.Second

// retryable reports whether the attempt that got res or err may be
// repeated.
func (r Rules) retryable(res *http.Response, err error) bool {
	if provider.IsFinal(err) {
		return false
	}
	if res == nil {
		return true
	}
	if retry, ok := shouldRetryHeader(res); ok {
		return retry
	}
	switch s := res.StatusCode; {
	case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests, s >= http.StatusInternalServerError:
		return true
	}
	return false
}

// droppedRetryable reports whether an answer whose body broke off may be
// sent for again: as after a connection error, unless it said not to.
func droppedRetryable(res *http.Response) bool {
	retry, ok := shouldRetryHeader(res)
	return !ok || retry
}

// shouldRetryHeader is what res's x-should-retry header asks for, if it
// says "true" or "false".
func shouldRetryHeader(res *http.Response) (retry, ok bool) {
	switch res.Header.Get("x-should-retry") {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// pause is what follows an attempt: whether there is another, after
// what wait, and why not when there is none.
type pause struct {
	// again: another attempt follows, after wait
	again bool
	wait  time.Duration
	// asked: wait is the answer's retry-after, not a backoff
	asked bool
	// tooLong: the retry-after asked for is past room, the most the
	// retries could still wait (RetryAfterLimit, or what is left of For)
	tooLong bool
	room    time.Duration
}

// pause is what follows attempt n (0 for the first), which got res (nil
// after a connection error) and may be repeated when retry is set;
// elapsed is the time since the first attempt. Bounded by count, attempt
// n is the last when n is MaxRetries; bounded by time (For), when the
// time since the first attempt with the wait before the next is past
// bound — For, or less when the request's context says the retries must
// end sooner (provider.RetryBound). A retry-after past RetryAfterLimit,
// or past what is left of the bound, ends the retries (tooLong); a
// backoff past it ends them as the bound.
func (s *Sender) pause(res *http.Response, n int, elapsed, bound time.Duration, retry bool) pause {
	if !retry {
		return pause{}
	}
	d, asked, tooLong := s.retryAfter(res)
	if s.rules.For > 0 && asked && !tooLong && d <= 0 {
		// retry-after: 0, or a date already past (a clock ahead of the
		// provider's): bounded by time rather than by a few attempts,
		// taking it at its word would send again at once for all of
		// For; it waits the backoff as an answer that asked nothing
		asked = false
	}
	if s.rules.For <= 0 && n >= s.rules.MaxRetries {
		// the count is spent: no more attempts, the wait asked for told
		// (provider.RetriesEnded) to whoever sends the request again
		return pause{wait: d, asked: asked && !tooLong}
	}
	if tooLong {
		return pause{asked: true, tooLong: true, room: s.rules.RetryAfterLimit}
	}
	if !asked {
		d = Backoff(n, s.jitter)
	}
	if s.rules.For > 0 && elapsed+d > bound {
		p := pause{wait: d, asked: asked}
		if asked {
			p.tooLong, p.room = true, max(0, bound-elapsed)
		}
		return p
	}
	return pause{again: true, wait: d, asked: asked}
}

// ended is err, the wire's error of the answer that ended the call, with
// why it ended there: retry, the answer was one the rules retry; p, what
// the rules said after it (provider.RetriesEnded).
func (p pause) ended(err error, retry bool) error {
	re := &provider.RetriesEnded{Err: err, Retryable: retry, TooLong: p.tooLong, Room: p.room}
	if p.asked {
		re.RetryAfter = p.wait
	}
	return re
}

// Backoff is the SDKs' wait before the attempt after attempt n (0 for
// the first) when the answer asked for none: 0.5 s·2ⁿ, at most 8 s, less
// jitter(a quarter of it) — jitter(q) is a random count in [0, q) (nil:
// math/rand's). The agent's resends wait the same (agent/retry.go).
func Backoff(n int, jitter func(q int64) int64) time.Duration {
	if jitter == nil {
		jitter = randomJitter
	}
	backoff := 0.5 * float64(time.Second) * math.Pow(2, float64(n))
	d := maxBackoff
	if backoff < float64(maxBackoff) {
		d = time.Duration(backoff)
	}
	if q := int64(d / 4); q > 0 {
		d -= time.Duration(jitter(q))
	}
	return d
}

// retryAfter reads the wait res asks for: retry-after-ms, else
// retry-after; ok is false when neither says one, tooLong true when the
// one said is past RetryAfterLimit.
func (s *Sender) retryAfter(res *http.Response) (d time.Duration, ok, tooLong bool) {
	if res == nil {
		return 0, false, false
	}
	limit := s.rules.RetryAfterLimit
	for _, h := range [...]struct {
		name string
		unit time.Duration
	}{{"Retry-After-Ms", time.Millisecond}, {"Retry-After", time.Second}} {
		v := res.Header.Get(h.name)
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if limit <= 0 {
			if err == nil {
				return max(0, time.Duration(f*float64(h.unit))), true, false
			}
		} else {
			if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 1) {
				return 0, true, true
			}
			if err == nil {
				if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
					continue
				}
				most := float64(limit) / float64(h.unit)
				switch {
				case f > most:
					return 0, true, true
				case f == most:
					return limit, true, false
				}
				return time.Duration(f * float64(h.unit)), true, false
			}
		}
		if h.unit != time.Second {
			continue // only retry-after may be a date
		}
		t, err := http.ParseTime(v) // the three forms of RFC 9110 §5.6.7
		if err != nil {
			if t, err = time.Parse(time.RFC1123, v); err != nil {
				continue
			}
		}
		d := t.Sub(s.now())
		switch {
		case d <= 0:
			return 0, true, false
		case limit > 0 && d > limit:
			return 0, true, true
		}
		return d, true, false
	}
	return 0, false, false
}

// randomJitter is a random count in [0, n).
func randomJitter(n int64) int64 { return rand.Int64N(n) }

// originsMatch reports whether a and b have the same scheme, host and port
// (a port left out is the scheme's).
func originsMatch(a, b *url.URL) bool {
	if a == nil || b == nil || !strings.EqualFold(a.Scheme, b.Scheme) || !strings.EqualFold(a.Hostname(), b.Hostname()) {
		return false
	}
	return port(a) == port(b)
}

// port is u's port, or its scheme's.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
