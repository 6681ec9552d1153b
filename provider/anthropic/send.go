package anthropic

import (
	"context"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/myelin-run/myelin/internal/send"
)

// A streamed request to Anthropic's own API is posted by internal/send,
// not through the SDK's request plumbing (its per-call option list and
// credential resolution, request config, header maps and request clones):
// the method, URL and headers are those the SDK builds for the same call
// (the key, anthropic-version, the X-Stainless-* set, the thinking's beta
// header), read once when the Provider is made (send.Probe); the retries
// are anthropic-sdk-go's rules (send.Anthropic), and an error answer is
// made the SDK's *anthropic.Error as the SDK makes it (refusal), so that
// describe reads what it read. On a platform (platform.go) too: the
// headers are read from the SDK with the platform's options, and each
// attempt is given to the platform's Send (Bedrock, Vertex: route and
// sign) or Authorize (Google Cloud: its token); only a whole answer
// (NoStream) still goes through the SDK's client and middlewares.
// TestTheWireSendsWhatTheSDKSends and TestRetriesAreTheSDKs hold the two
// to the same requests, and each platform's tests hold its requests to
// the SDK's middleware's.

// path is the Messages endpoint, under the base URL.
const path = "v1/messages"

// sender is the Sender of client's Messages requests asking for th,
// through httpClient (nil: the SDK's default), with maxRetries retries
// bounded by cfg.RetryFor, waiting at cfg.Limiter when set (gated).
func sender(client sdk.Client, httpClient *http.Client, maxRetries int, cfg Config, identity string) (*send.Sender, error) {
	t, err := probe(client, cfg.Thinking)
	if err != nil {
		return nil, err
	}
	return gated(t, httpClient, maxRetries, cfg, Wire, identity), nil
}

// gated is the Sender of t's requests through httpClient, with
// anthropic-sdk-go's rules (maxRetries retries, or as many as
// cfg.RetryFor allows when set) and, with cfg.Limiter, every attempt
// waiting at the limiter under wire's name and identity
// (docs/ratelimits.md): ratelimit.Identity of the API key on Anthropic's
// own API, a platform's account on a platform.
func gated(t send.Target, httpClient *http.Client, maxRetries int, cfg Config, wire, identity string) *send.Sender {
	rules := send.Anthropic(maxRetries)
	rules.For = cfg.RetryFor
	return send.New(t, httpClient, rules, refusal).WithLimiter(cfg.Limiter, wire, identity)
}

// target is the target of p's streamed requests asking for th, read from
// p.probed: on a platform with Send, less the anthropic-version header,
// and with th's betas only where the platform takes them as a header; on
// one with Authorize, less the Authorization it was probed with.
func (p *Provider) target(th Thinking) (send.Target, error) {
	t, err := probe(p.probed, p.sentThinking(th))
	if err != nil {
		return t, err
	}
	if p.form != nil {
		t.Header.Del("anthropic-version")
	}
	if t.Header.Get("Authorization") == probeAuthorization {
		t.Header.Del("Authorization")
	}
	return t, nil
}

// sentThinking is th as far as it shapes the request's headers: none of
// it on a platform that takes the betas in the body.
func (p *Provider) sentThinking(th Thinking) Thinking {
	if p.form != nil && p.form.betasInBody {
		return Thinking{}
	}
	return th
}

// probe is the target of client's Messages requests asking for th, as the
// SDK builds them.
func probe(client sdk.Client, th Thinking) (send.Target, error) {
	var p send.Probe
	var resp *http.Response
	opts := append([]option.RequestOption{option.WithRequestBody("application/json", []byte("{}"))}, th.options()...)
	opts = append(opts, option.WithMaxRetries(0), option.WithMiddleware(p.Middleware))
	t, err := p.Target(client.Post(context.Background(), path, nil, &resp, opts...))
	if err != nil {
		return send.Target{}, fmt.Errorf("anthropic: %w", err)
	}
	return t, nil
}

// refusal is the SDK's error for an answer of 400 or more: its status,
// request ID and workspace, the request (with the method and URL of the
// one the answer came to) and the body decoded into it.
func refusal(req *http.Request, res *http.Response, body []byte) error {
	sent := *req
	if to := res.Request; to != nil {
		u := *req.URL
		u.Scheme, u.Host, u.Path, u.RawPath = to.URL.Scheme, to.URL.Host, to.URL.Path, to.URL.RawPath
		sent.Method, sent.URL = to.Method, &u
	}
	e := &sdk.Error{Request: &sent, Response: res, StatusCode: res.StatusCode,
		RequestID: res.Header.Get("request-id"), WorkspaceID: res.Header.Get("anthropic-workspace-id")}
	if err := e.UnmarshalJSON(body); err != nil {
		return err
	}
	return e
}
