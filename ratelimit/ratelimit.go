// Package ratelimit owns the provider rate limits myelin reads and
// shares: what one response of a wire says of its key's limits — the
// requests and tokens left and when they come back, a retry-after, a 429,
// an overloaded provider — read into one Observation, and the earliest
// time the next request may be sent by it. A limiter is keyed by a Key:
// the provider endpoint, the identity of the API key and the model.
//
// The Limiter (limiter.go) holds one gate per Key that requests wait at,
// fed by what responses said and, through a Shared store, by what other
// processes saw; it counts the requests it lets through, and the budget
// an answer gives counts those its provider had not seen (state.go:
// State.Spend and State.Apply, which a Shared store applies atomically).
//
// It must not hold or log an API key: a Key carries Identity(apiKey), a
// short hash of it, never the key, and nothing here keeps a response's
// error text (a provider may quote part of a key in one). It reads and
// makes requests wait; it does not retry or decide that a turn fails —
// the wires, the agent and the workers do that with what it reads. It
// imports nothing of myelin, so that every wire can import it.
package ratelimit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// MaxWait bounds every wait an Observation asks for: a retry-after or a
// reset further off than this is taken as this far off. A provider's
// longest real wait is a day's quota (Gemini's daily quotas come back at
// midnight Pacific), so a longer one is a broken value or a proxy's,
// still read as "a long time" rather than ignored, and never so long that
// a turn is held past any bound a user sets.
const MaxWait = 24 * time.Hour

// Key names one limiter: what a provider limits together. Endpoint is the
// provider's address as the wire sends to it (its host, such as
// "api.anthropic.com"), Identity the key's identity (Identity), Model the
// model asked for. It must never hold the key itself.
type Key struct {
	Endpoint string
	Identity string
	Model    string
}

// String is the key in one line, for logs and waiting lines; it holds no
// secret, the identity being a hash.
func (k Key) String() string {
	return k.Endpoint + " " + k.Identity + " " + k.Model
}

// Identity is the identity of an API key: "k:" and the first 12 hex
// digits of its SHA-256, enough to tell a process's keys apart and to
// match the same key across processes, and nothing to recover it by. An
// empty key (a platform's own credentials) has the empty identity; the
// caller then names the account some other way, never by a short-lived
// token.
func Identity(apiKey string) string {
	if apiKey == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(apiKey))
	return "k:" + hex.EncodeToString(sum[:])[:12]
}

// Dimension is what a response said of one limited quantity (requests,
// tokens, input or output tokens): its limit, what is left of it, and when
// it is whole again. A value the response did not say (or said in a form
// that could not be read) is unknown, which HasLimit and HasRemaining tell
// from 0; an unknown Reset is the zero time.
type Dimension struct {
	Limit, Remaining       int64
	HasLimit, HasRemaining bool
	Reset                  time.Time
}

// Spent is whether the response said nothing is left of d.
func (d Dimension) Spent() bool { return d.HasRemaining && d.Remaining == 0 }

// Observation is what one response of a wire said of its limits and of
// the provider's state. It is read by FromResponse; the zero Observation
// says nothing and asks for no wait.
type Observation struct {
	// At is when the response was read (FromResponse's now); RetryAfter
	// counts from it.
	At time.Time
	// From names where the response came from in Why: the wire by
	// default; a caller that knows the endpoint's host may set it.
	From string
	// Status is the HTTP status, 0 for an error read from inside a stream.
	Status int
	// Error is the error's name as the wire gave it (rate_limit_error,
	// overloaded_error, RESOURCE_EXHAUSTED, ThrottlingException,
	// insufficient_quota, ...), or "". Never its message.
	Error string
	// RetryAfter is the wait the response asked for (retry-after-ms,
	// retry-after in seconds or as an HTTP date, Gemini's RetryInfo), at
	// most MaxWait; 0 when it asked for none or for 0.
	RetryAfter time.Duration
	// The limits the response reported (Anthropic's and OpenAI's headers).
	Requests, Tokens, InputTokens, OutputTokens Dimension
	// Limited is a refusal for the key's rate limit: a 429 or a throttling
	// error (rate_limit_error, RESOURCE_EXHAUSTED, ThrottlingException).
	Limited bool
	// QuotaSpent is a refusal that waiting will not lift — OpenAI's
	// insufficient_quota, a plan's or a bill's limit: the turn should say
	// so rather than wait.
	QuotaSpent bool
	// Overloaded is the provider saying it cannot serve now, whatever the
	// key: 529, Anthropic's overloaded_error, 503 (Gemini's and Vertex's
	// UNAVAILABLE, Bedrock's ServiceUnavailableException, OpenAI's "engine
	// overloaded"), Bedrock's ModelNotReadyException.
	Overloaded bool
	// ServerFault is any other 5xx (500, 502, 504, ...): the provider
	// failed this request; a retry may succeed.
	ServerFault bool
	// Unreached is a request that got no answer because it never reached
	// the provider: no connection was made (refused, a name that does not
	// resolve, a certificate refused, a plain-HTTP answer to a TLS
	// handshake: provider.Unconnected). It says nothing of the
	// requests left and keeps the budget, as a fault without limit
	// headers does: no answer is coming, so the request's retry goes at
	// its own backoff, not Probe after it.
	Unreached bool
}

// dimensions names o's dimensions, in the order Why gives them.
func (o Observation) dimensions() []struct {
	name string
	d    Dimension
} {
	return []struct {
		name string
		d    Dimension
	}{
		{"requests", o.Requests},
		{"tokens", o.Tokens},
		{"input tokens", o.InputTokens},
		{"output tokens", o.OutputTokens},
	}
}

// Next is the earliest time the next request may be sent by o, asked at
// now: a retry-after decides when there is one (counted from At, or from
// now when At is unknown); otherwise the latest reset of a dimension with
// nothing left; otherwise now. Never before now, never after now+MaxWait.
// A refusal that names no time (a 429 without retry-after, a 529, a 5xx)
// gives now: backing off then is the retry policy's, not the reading's.
func (o Observation) Next(now time.Time) time.Time {
	next := now
	if o.RetryAfter > 0 {
		base := o.At
		if base.IsZero() {
			base = now
		}
		next = later(next, base.Add(o.RetryAfter))
	} else {
		for _, dim := range o.dimensions() {
			if dim.d.Spent() {
				next = later(next, dim.d.Reset)
			}
		}
	}
	if limit := now.Add(MaxWait); next.After(limit) {
		return limit
	}
	return next
}

// Wait is how long from now until Next(now); never negative.
func (o Observation) Wait(now time.Time) time.Duration {
	return o.Next(now).Sub(now)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Why says in words, for a waiting line, what o says: the refusal and the
// wait it asked for ("429 from api.anthropic.com: retry after 20s"), or,
// without a retry-after, each dimension with nothing left and when it
// comes back ("requests: 0 of 50 left until 12:00:05 UTC"); "" when o
// says nothing that asks for a wait. Times are given in UTC.
func (o Observation) Why() string {
	var parts []string
	if head := o.refusal(); head != "" {
		if o.RetryAfter > 0 {
			head += ": retry after " + roundWait(o.RetryAfter).String()
		}
		parts = append(parts, head)
	} else if o.RetryAfter > 0 {
		parts = append(parts, "retry after "+roundWait(o.RetryAfter).String()+" from "+o.from())
	}
	if o.RetryAfter <= 0 {
		for _, dim := range o.dimensions() {
			if !dim.d.Spent() {
				continue
			}
			s := dim.name + ": 0"
			if dim.d.HasLimit {
				s += fmt.Sprintf(" of %d", dim.d.Limit)
			}
			s += " left"
			if !dim.d.Reset.IsZero() {
				s += " until " + dim.d.Reset.UTC().Format("15:04:05") + " UTC"
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

// refusal is the head of Why for a refused or failed response: its status
// (or, from inside a stream, the error's name), where from, and what kind
// when the status does not say it; "" for a response that was neither.
func (o Observation) refusal() string {
	if !o.Limited && !o.Overloaded && !o.ServerFault && !o.QuotaSpent {
		return ""
	}
	what := o.Error
	if o.Status != 0 {
		what = fmt.Sprint(o.Status)
	}
	if what == "" {
		what = "an error"
	}
	head := what + " from " + o.from()
	switch {
	case o.QuotaSpent:
		head += ", quota spent"
	case o.Overloaded && o.Status != 529:
		head += ", overloaded"
	}
	return head
}

func (o Observation) from() string {
	if o.From == "" {
		return "the provider"
	}
	return o.From
}

// roundWait rounds a wait for reading: to the millisecond below a second,
// to a tenth of a second above.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
