package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/myelin-run/myelin/provider"
)

// This file is the Anthropic wire on a cloud platform that serves Claude
// behind its own address and auth: Amazon Bedrock (provider/bedrock) and
// Google Vertex AI (provider/vertex), and Anthropic's own gateway on
// Google Cloud (provider/googlecloud), which changes nothing in the body
// and only routes and authorizes it. The request is the one Body builds —
// the same messages, cache markers and tools, byte for byte — as the
// platform takes it: on Bedrock and Vertex (Platform.Send) the wire writes
// it without the model, with anthropic_version at its end
// (platformbody.go), and the platform's Send puts the model in the URL and
// signs the request (the HTTP client gives Vertex's token); on Google
// Cloud the gateway's address routes it and Authorize gives it a token.
// Every request, streamed or whole, is posted by internal/send (send.go),
// each attempt given to Send or Authorize as the SDK's middlewares were
// given it. Only transport and auth differ; the answer is read as on the first-party API, Bedrock's binary
// event stream frame by frame into the same events (eventstream.go).

// Platform is a cloud that serves the Messages API: its name, the
// anthropic_version its documentation requires in the body, its address,
// and what routes and authorizes each request — its Send (Bedrock,
// Vertex) or Authorize (Google Cloud's gateway). It must not change the
// body otherwise.
type Platform struct {
	// Name names the platform in errors and in the cache settings
	// ("bedrock", "vertex", "google-cloud").
	Name string
	// Version is the body's anthropic_version ("bedrock-2023-05-31",
	// "vertex-2023-10-16"), written at the body's end. Only with Send.
	Version string
	// BaseURL is the platform's address, under which the requests go
	// (v1/messages, which Send may replace); Config.BaseURL, when set,
	// replaces it (for a proxy, or a test's fake). Required unless
	// Config.BaseURL is set.
	BaseURL string
	// EventStream, for a platform that streams answers as an AWS event
	// stream (Bedrock), has the wire read its frames itself rather than
	// the server-sent event text the SDK's middleware would make of
	// them (eventstream.go).
	EventStream bool
	// Send, when set, takes the place of the SDK's platform middleware
	// (Bedrock's, Vertex's), whose edits of the body were each a pass
	// over the whole conversation: the wire writes the platform's body
	// itself — the first-party body less "model" (and less "stream" with
	// StreamInURL), with "anthropic_version" (and, with BetasInBody, the
	// betas as "anthropic_beta") at its end, byte for byte what that
	// middleware made of it (platformForm) — and Send, given each attempt
	// as the SDK made it for /v1/messages with the anthropic-version
	// header already dropped, points it at the platform's URL for rt and
	// authorizes it. Send must not change the body. The first-party
	// environment (ANTHROPIC_API_KEY, ANTHROPIC_CUSTOM_HEADERS, ...) is
	// not read on a platform.
	Send func(r *http.Request, rt Route) error
	// Authorize, for a platform whose address routes its requests without
	// changing the body (Google Cloud's gateway), authorizes each
	// attempt. Not with Send.
	Authorize func(r *http.Request) error
	// HTTPClient, with Send, is the HTTP client the platform's requests
	// go through (Vertex's, which adds its token); nil: Config's.
	HTTPClient *http.Client
	// StreamInURL leaves "stream" out of the body: the URL says it
	// (Bedrock's invoke-with-response-stream). Only with Send.
	StreamInURL bool
	// BetasInBody sends the betas (interleaved thinking's) in the body as
	// "anthropic_beta" rather than the anthropic-beta header (Bedrock).
	// Only with Send.
	BetasInBody bool
	// Identity names the account the platform's credentials are of, for
	// the rate limiter's key (Config.Limiter; docs/ratelimits.md,
	// "Platforms"): "aws:REGION/...", "gcp:PROJECT/...". It must never
	// hold a secret or a short-lived token; "" has every account of the
	// platform's host share one limiter per model.
	Identity string
}

// Route is what a Platform's Send needs of one request: its model and
// whether it streams, which the platform takes in the URL, and the body
// sent, which a signature hashes. Send must not change Body.
type Route struct {
	// Model is the model as the SDK's middleware read it from the body
	// (wireModel): req.Model, unless that is not UTF-8.
	Model  string
	Stream bool
	Body   []byte
}

// OnPlatform is the Anthropic wire sending through a Platform. It is a
// Provider (every method of the first-party wire is its own), with errors
// named by the platform and the platform's own refusals of a request as
// too long read as provider.TooLongError. It must not be used with an
// Anthropic API key: the platform's credentials authorize it.
type OnPlatform struct {
	*Provider
	platform Platform
}

// NewOn returns the wire on pl. Of cfg it reads the retries (MaxRetries,
// RetryFor), the rate limiter (Limiter: the key's identity is
// pl.Identity), the HTTP client, NoStream, CacheTTL and BaseURL (which,
// when set, replaces the platform's address: for a proxy, or a test's
// fake); an API key is refused, as one that would be silently unused.
func NewOn(pl Platform, cfg Config) (*OnPlatform, error) {
	if pl.Name == "" {
		return nil, errors.New("anthropic: a platform needs a name")
	}
	if err := cfg.CacheTTL.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", pl.Name, err)
	}
	if cfg.APIKey != "" {
		return nil, fmt.Errorf("%s: an Anthropic API key is not used here: %s authorizes requests with its own credentials", pl.Name, pl.Name)
	}
	if pl.BaseURL == "" && cfg.BaseURL == "" {
		return nil, fmt.Errorf("%s: the platform has no address", pl.Name)
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = provider.DefaultRetries
	case retries < 0:
		retries = 0
	}
	if pl.Send == nil && (pl.StreamInURL || pl.BetasInBody || pl.HTTPClient != nil || pl.Version != "") {
		return nil, fmt.Errorf("%s: Version, StreamInURL, BetasInBody and HTTPClient need Send", pl.Name)
	}
	if (pl.Send == nil) == (pl.Authorize == nil) {
		return nil, fmt.Errorf("%s: a platform has Send or Authorize, one of them", pl.Name)
	}
	conn := connection{
		// the platform's client was made without the first-party
		// environment: no custom headers, no key
		spec:       targetSpec{base: first(cfg.BaseURL, pl.BaseURL)},
		httpClient: cfg.HTTPClient, retries: retries, wire: pl.Name, identity: pl.Identity,
		sentBetas: !pl.BetasInBody,
	}
	if pl.HTTPClient != nil {
		conn.httpClient = pl.HTTPClient
	}
	var route func(*http.Request, Route) error
	var form *platformForm
	if pl.Send != nil {
		form = &platformForm{version: pl.Version, streamInURL: pl.StreamInURL, betasInBody: pl.BetasInBody}
		conn.spec.noVersion = true // in the body: the SDK's middleware dropped the header
		route = pl.Send
	} else {
		route = func(r *http.Request, _ Route) error { return pl.Authorize(r) }
	}
	p, err := newWire(cfg, conn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pl.Name, err)
	}
	p.form, p.route, p.eventStream = form, route, pl.EventStream
	return &OnPlatform{Provider: p, platform: pl}, nil
}

// first is the first of values that is not empty, or "".
func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// CacheSettings says how the wire marks the prompt cache, platform named:
// the markers are the first-party wire's, the cache the platform's own.
func (p *OnPlatform) CacheSettings() string {
	return p.platform.Name + ": " + p.Provider.CacheSettings()
}

// WireName is the platform's name ("bedrock", "vertex", "google-cloud";
// provider.Named): its requests are in its own shapes around Anthropic's.
func (p *OnPlatform) WireName() string { return p.platform.Name }

// Complete sends the request through the platform and reads the answer.
func (p *OnPlatform) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	streamed := false
	relay := func(s string) {
		streamed = true
		if onText != nil {
			onText(s)
		}
	}
	resp, err := p.Provider.Complete(ctx, req, relay)
	if err != nil {
		return resp, p.describe(err, streamed)
	}
	return resp, nil
}

// describe names the platform in err and reads a refusal as too long in
// the platform's words: the message of a Bedrock error is a top-level
// "message" (REST JSON), not the first-party "error.message"; and a
// refusal may come as an error event in a stream (status 200) before any
// output, which is the request's refusal all the same.
func (p *OnPlatform) describe(err error, streamed bool) error {
	name := p.platform.Name
	if tl, ok := provider.IsTooLong(err); ok {
		if tl.Err != nil {
			tl.Err = &provider.WireError{Msg: name + ": " + tl.Err.Error(), Err: tl.Err}
		}
		return tl
	}
	wrapped := &provider.WireError{Msg: name + ": " + err.Error(), Err: err}
	var apiErr *Error
	if !streamed && errors.As(err, &apiErr) {
		status := apiErr.StatusCode
		if status < http.StatusBadRequest {
			status = http.StatusBadRequest // an error event in the stream
		}
		if tl := platformTooLong(status, platformMessage(apiErr)); tl != nil {
			tl.Err = wrapped
			return tl
		}
	}
	return wrapped
}

// platformMessage is the provider's message in an API error: the
// first-party error.message, else a top-level "message" (Bedrock's
// {"message": "..."}, any case).
func platformMessage(apiErr *Error) string {
	if apiErr.Message != "" {
		return apiErr.Message
	}
	var body struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
	return body.Message
}

// The platforms' own words for a request too long, besides Anthropic's
// (which Bedrock passes on inside its own: "The model returned the
// following errors: prompt is too long: 200049 tokens > 200000 maximum"):
// Bedrock's older "Input is too long for requested model." and its limit
// on the body of InvokeModel ("Value at 'body' failed to satisfy
// constraint: Member must have length less than or equal to 25000000"),
// both 400 ValidationException. Neither gives a count.
var (
	// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
	inputTooLongForModel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)input is too long for (the )?requested model`) })
	bodyOverLimit        = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)value at 'body' failed to satisfy constraint: member must have length less than or equal to`)
	})
)

// platformTooLong reads a refusal as too long from its status and
// message, nil when it is another error.
func platformTooLong(status int, message string) *provider.TooLongError {
	if tl := tooLong(status, message); tl != nil {
		return tl
	}
	if status == http.StatusBadRequest && (inputTooLongForModel().MatchString(message) || bodyOverLimit().MatchString(message)) {
		return &provider.TooLongError{}
	}
	return nil
}

// WithThinking is p asking for th (see Provider.WithThinking), on the same
// platform: Claude thinks on Bedrock and Vertex as on the API.
func (p *OnPlatform) WithThinking(th Thinking) (*OnPlatform, error) {
	ap, err := p.Provider.WithThinking(th)
	if err != nil {
		return nil, err
	}
	return &OnPlatform{Provider: ap, platform: p.platform}, nil
}

// CheckSegment is an error naming path when seg, one escaped segment of
// it that holds a name of the caller's (a model, a project), would not
// reach the platform as that segment: one that is "." or "..", alone or
// before a ";" (either may be escaped), which a server or proxy resolves
// away, or one that starts with ";". The SDK's platform middlewares
// refused such a path before sending it; a Platform's Send does too.
func CheckSegment(path, seg string) error {
	i, dots := 0, 0
	for dots < 2 {
		if strings.HasPrefix(seg[i:], ".") {
			i++
		} else if hasPrefixFold(seg[i:], "%2e") {
			i += 3
		} else {
			break
		}
		dots++
	}
	if dots > 0 && (i == len(seg) || seg[i] == ';' || hasPrefixFold(seg[i:], "%3b")) {
		return fmt.Errorf("constructed path %q contains dot segment %q which is not allowed", path, seg)
	}
	if strings.HasPrefix(seg, ";") || hasPrefixFold(seg, "%3b") {
		return fmt.Errorf("constructed path %q contains segment %q which starts with \";\" and is not allowed", path, seg)
	}
	return nil
}

// hasPrefixFold reports whether s starts with prefix, in any case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// PathSegment is s percent-encoded as one path segment: every byte but
// the ASCII letters and digits and those RFC 3986 allows in a segment
// (- . _ ~ ! $ & ' ( ) * + , ; = : @) as %XX, "/" and "%" included: a
// model or a project as the SDK's platform packages put it in a path.
func PathSegment(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !segmentByte(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexDigits = "0123456789ABCDEF"
	out := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if segmentByte(c) {
			out = append(out, c)
			continue
		}
		out = append(out, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	return string(out)
}

// segmentByte reports whether c stands for itself in a path segment
// (RFC 3986's pchar, less the percent sign).
func segmentByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}
