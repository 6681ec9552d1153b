package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// A streamed request is posted by internal/send, not through the SDK's
// request plumbing (its per-call option list, request config, header
// maps and request clones, about a tenth of a light round): the method,
// URL and headers are those the SDK builds for the same call, read once
// when the Provider is made (send.Probe), the retries are openai-go's
// rules (send.OpenAI), and an error answer is made the SDK's *openai.Error
// as the SDK makes it (refusal), so that DescribeError reads what it
// read. TestTheWireSendsWhatTheSDKSends and TestRetriesAreTheSDKs hold
// the two to the same requests.

// path is the chat completions endpoint, under the base URL.
const path = "chat/completions"

// Limits are how the requests of a wire built on openai-go wait at a
// rate limiter and how long they are retried: its Config's Limiter and
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

// Gate is the gate of the requests sent through the SDK (NoStream):
// the same limiter and key as the Sender's; nil without a limiter.
func (l Limits) Gate() *ratewait.Gate { return ratewait.New(l.Limiter, l.Wire, l.Identity) }

// Connect is the SDK's client for endpoint ep, through httpClient (nil:
// the SDK's default), and the Sender of its POST requests to path, with
// lim (its Identity set to that of ep's key): what every wire built on
// openai-go (Chat Completions, the Responses API) starts from. It
// returns lim as it set it.
func Connect(ep provider.Endpoint, path string, httpClient *http.Client, lim Limits) (sdk.Client, *send.Sender, Limits, error) {
	opts := []option.RequestOption{option.WithAPIKey(ep.APIKey), option.WithMaxRetries(ep.MaxRetries)}
	if ep.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(ep.BaseURL))
	}
	if httpClient != nil {
		opts = append(opts, option.WithHTTPClient(httpClient))
	}
	client := sdk.NewClient(opts...)
	lim.Identity = ratelimit.Identity(ep.APIKey)
	s, err := Sender(client, path, httpClient, ep.MaxRetries, lim)
	return client, s, lim, err
}

// sender is the Sender of client's chat completion requests through
// httpClient (nil: the SDK's default), with maxRetries retries, without a
// limiter.
func sender(client sdk.Client, httpClient *http.Client, maxRetries int) (*send.Sender, error) {
	return Sender(client, path, httpClient, maxRetries, Limits{Wire: "openai"})
}

// Sender is the Sender of client's POST requests to path (under the base
// URL: "chat/completions", "responses") through httpClient (nil: the
// SDK's default), with maxRetries retries and openai-go's rules, bounded
// by lim.RetryFor when set, every attempt waiting at lim.Limiter when
// set: a wire built on openai-go posts its streamed requests with it as
// the SDK would, and DescribeError reads its refusals as the SDK's.
func Sender(client sdk.Client, path string, httpClient *http.Client, maxRetries int, lim Limits) (*send.Sender, error) {
	var probe send.Probe
	var resp *http.Response
	err := client.Post(context.Background(), path, nil, &resp,
		option.WithRequestBody("application/json", []byte("{}")),
		option.WithMaxRetries(0), option.WithMiddleware(probe.Middleware))
	t, err := probe.Target(err)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	rules := send.OpenAI(maxRetries)
	rules.For = lim.RetryFor
	return send.New(t, httpClient, rules, refusal).WithLimiter(lim.Limiter, lim.Wire, lim.Identity), nil
}

// refusal is the SDK's error for an answer of 400 or more: its status,
// the request and answer, and the body's "error" member decoded into it.
func refusal(req *http.Request, res *http.Response, body []byte) error {
	e := &sdk.Error{Request: req, Response: res, StatusCode: res.StatusCode}
	if err := e.UnmarshalJSON(errorMember(body)); err != nil {
		return err
	}
	return e
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
