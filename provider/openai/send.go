package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// Every request is posted by internal/send, not through openai-go (which
// the binary does not link): the method, URL and headers are those the
// SDK builds for the same call, built by hand (Target, target.go), the
// retries are openai-go's rules (send.OpenAI), and an error answer is an
// *Error as the SDK made its *openai.Error (refusal, error.go), so that
// DescribeError reads what it read. TestTheWireSendsWhatTheSDKSends and
// TestTheTargetIsTheSDKs hold the two to the same requests.

// path is the chat completions endpoint, under the base URL.
const path = "chat/completions"

// Limits are how the requests of a wire on the OpenAI API wait at a rate
// limiter and how long they are retried: its Config's Limiter and
// RetryFor, and the names the limiter's key is made of.
type Limits struct {
	// Limiter, when set, is the limiter every attempt waits at and every
	// answer is observed by (docs/ratelimits.md); nil: none.
	Limiter *ratelimit.Limiter
	// RetryFor, when above 0, bounds the retries before any output by
	// time (send.Rules.For) instead of by their count.
	RetryFor time.Duration
	// Wire is the wire's name (provider.WireName's), which
	// ratelimit.FromResponse reads by.
	Wire string
	// Identity is ratelimit.Identity of the API key (Connect sets it),
	// never the key.
	Identity string
}

// Gate is a gate of its own over the limiter the Senders' requests wait
// at (not the Senders' gate, which WithLimiter made and keeps): made of
// the same limiter, wire and identity, its Gate.Key is the key a request
// in a context waits under there, for a wire to observe what an answer
// of 200 says after (an error in its stream); nil without a limiter.
func (l Limits) Gate() *ratewait.Gate { return ratewait.New(l.Limiter, l.Wire, l.Identity) }

// Senders are the Senders of a wire's requests to one endpoint.
type Senders struct {
	// Stream posts streamed requests: retried before any output by
	// Limits.RetryFor when set, else by the endpoint's MaxRetries.
	Stream *send.Sender
	// Whole posts requests for a whole answer (NoStream): as Stream, but
	// with Limits.RetryFor set, never retried — the agent's resend within
	// RetryFor is then their one retry policy (docs/ratelimits.md,
	// "Retries"), as it was when the SDK sent them.
	Whole *send.Sender
	// Limits are those given, with Identity set.
	Limits Limits
}

// Connect is the Senders of POST requests to path (under the base URL:
// "chat/completions", "responses") of endpoint ep, through httpClient
// (nil: the SDK's default, send.DefaultClient), with lim (its Identity
// set to that of ep's key): what every wire on the OpenAI API (Chat
// Completions, the Responses API) starts from. The two Senders share one
// HTTP client (one pool of connections). It sends nothing.
func Connect(ep provider.Endpoint, path string, httpClient *http.Client, lim Limits) (Senders, error) {
	t, err := Target(ep, path)
	if err != nil {
		return Senders{}, err
	}
	if httpClient == nil {
		httpClient = send.DefaultClient()
	}
	lim.Identity = ratelimit.Identity(ep.APIKey)
	s := Senders{Stream: Sender(t, httpClient, ep.MaxRetries, lim), Limits: lim}
	s.Whole = s.Stream
	if lim.RetryFor > 0 {
		once := lim
		once.RetryFor = 0
		s.Whole = Sender(t, httpClient, 0, once)
	}
	return s, nil
}

// Sender is the Sender of requests to t (Target's) through httpClient
// (nil: the SDK's default), with maxRetries retries and openai-go's
// rules, bounded by lim.RetryFor when set, every attempt waiting at
// lim.Limiter when set, an error answer made an *Error: a wire on the
// OpenAI API posts with it as openai-go would, and DescribeError reads
// its refusals as the SDK's.
func Sender(t send.Target, httpClient *http.Client, maxRetries int, lim Limits) *send.Sender {
	rules := send.OpenAI(maxRetries)
	rules.For = lim.RetryFor
	return send.New(t, httpClient, rules, refusal).WithLimiter(lim.Limiter, lim.Wire, lim.Identity)
}

// PostWhole posts body with s (a Senders' Whole) and reads the whole
// answer: its body, or the Sender's error (an *Error for an answer of 400
// or more), or openai-go's words for a body that broke off.
func PostWhole(ctx context.Context, s *send.Sender, body []byte) ([]byte, error) {
	res, err := s.Post(ctx, body)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("error reading response body: %w", err)
	}
	return b, nil
}

// errorMember is the raw value of body's top-level "error" member, the
// first one when there are more, nil when body is not an object that has
// one: what the SDK reads (gjson's "error" path), for a JSON object. What
// follows the member is not read, so that a body cut after it still has
// it, as for the SDK.
func errorMember(body []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil
		}
		if k == "error" {
			return v
		}
	}
	return nil
}
