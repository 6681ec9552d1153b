// Package gemini is the Gemini API wire (generateContent and
// streamGenerateContent): it turns a provider.Request into a request in
// the shapes of Google's Go SDK, google.golang.org/genai, sends it, and
// reads the answer — all of it this package's own code: genai is not
// linked (only its tests use it, to hold the wire to it).
//
// The body is this package's (Body, encode.go; a Provider reuses the bytes
// of a conversation's last request that the next is made of the same as,
// prefix.go). It is sent with net/http (send.go) and the answer read with
// internal/sse and a scan of the few members the wire reads, held to
// encoding/json (read.go, scan.go): genai has no call that takes a body of
// its own and gives back the raw answer, and its reading decoded every
// streamed chunk into a map, converted it and decoded that again into its
// typed response (mapToStruct) — most of a light round's time in the
// wire. The request is the one genai v1.79.1's call sends: its address and
// API version resolved as genai resolves them (its default address,
// GOOGLE_GENAI_API_VERSION), its headers (the user agent and
// x-goog-api-client naming that version of genai, the key,
// x-server-timeout); the retries are genai's rules (HTTPRetryOptions:
// attempts, statuses, doubling waits with jitter) written once here,
// bounded by Config.RetryFor when set, and with Config.Limiter every
// attempt waits at the rate limiter first (internal/ratewait,
// docs/ratelimits.md); errors the API sent are APIError values, read from
// the body as genai reads its own. The tests hold the URL, headers and
// body to what genai sends, and the reading of recorded answers and errors
// to genai's (read_test.go, send_test.go).
//
// A tool result goes as a functionResponse whose response is the object
// {"output": TEXT} — TEXT the result's text verbatim, as stored — or
// {"error": TEXT} for an error result: the API takes only an object there,
// and these are the keys it documents; this wrap is the one the wire
// forces. Images go inside the function response (functionResponse.parts)
// for the models that take them there (the Gemini 3 series on), else as
// inline data right after the responses of their round. The model's
// thought signatures are stored on the part they came on (history.Part
// Signature, Wire "gemini") and its thought parts as reasoning parts (Raw,
// the part as the API sent it), and both are sent back byte for byte, as
// the API requires inside a tool loop. Gemini caches prefixes by itself
// (implicit caching): nothing is marked. A refusal of a request longer than
// the context window is a provider.TooLongError (see toolong.go). It must
// not change what it sends between two builds of the same Request, and
// never sends a history.Context record nor another wire's reasoning.
package gemini

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/result"
)

// DefaultAPIVersion is the API version the wire sends to when neither
// Config.APIVersion nor $GOOGLE_GENAI_API_VERSION names one: v1beta, not
// genai's own default (v1). What the wire sends — tools'
// parametersJsonSchema, function responses with parts (Gemini 3's images
// in a result), thought signatures and includeThoughts — is v1beta's
// first, Google's SDKs for Python and JavaScript default to it, and every
// public recording of the API's traffic uses it.
const DefaultAPIVersion = "v1beta"

// apiVersion is the API version the wire sends to: the configured one,
// else the one $GOOGLE_GENAI_API_VERSION names ("beta" meaning v1beta, as
// genai reads the variable), else DefaultAPIVersion.
func (cfg Config) apiVersion() string {
	if cfg.APIVersion != "" {
		return cfg.APIVersion
	}
	switch v := os.Getenv("GOOGLE_GENAI_API_VERSION"); v {
	case "":
		return DefaultAPIVersion
	case "beta":
		return "v1beta"
	default:
		return v
	}
}

// defaultBaseURL is the Gemini API's address, genai's default, when
// neither Config.BaseURL nor $GOOGLE_GEMINI_BASE_URL names one.
const defaultBaseURL = "https://generativelanguage.googleapis.com/"

// Config configures the wire. The zero value reads GEMINI_API_KEY (or
// GOOGLE_API_KEY, which the SDK prefers when both are set) and
// GOOGLE_GEMINI_BASE_URL from the environment, as the SDK itself does.
type Config struct {
	APIKey     string       // default: $GOOGLE_API_KEY, else $GEMINI_API_KEY
	BaseURL    string       // default: $GOOGLE_GEMINI_BASE_URL, else the SDK's
	MaxRetries int          // retries before any output (provider.Endpoint); 0 means 4, -1 none
	HTTPClient *http.Client // default: a new http.Client (net/http's default transport)
	// Limiter, when set, is the rate limiter every attempt of every
	// request waits at before it is sent and every answer is observed by
	// (docs/ratelimits.md): the key is the endpoint's host,
	// ratelimit.Identity of the API key (a platform's account otherwise)
	// and the request's model. nil: no limiter, nothing waits.
	Limiter *ratelimit.Limiter
	// RetryFor, when above 0, bounds the retries before any output by
	// time instead of by MaxRetries: a request is sent again, with
	// jittered exponential backoff, while the time since its first
	// attempt is within it (docs/ratelimits.md, "Retries"). 0: MaxRetries
	// bounds them.
	RetryFor time.Duration
	// APIVersion is the API version in the path ("v1", "v1beta"); ""
	// means $GOOGLE_GENAI_API_VERSION, else DefaultAPIVersion.
	APIVersion string
	// NoStream sends non-streaming requests; the answer then arrives whole.
	NoStream bool
	// Thoughts asks for the model's thought summaries, streamed to
	// Request.OnThinking and stored (see Options).
	Thoughts bool
	// RetryDelay is the wait before the first retry, doubling after; 0
	// means genai's (1 s, with up to 1 s of jitter). Set, it has no jitter.
	RetryDelay time.Duration
}

// Provider is the Gemini wire. It is safe for concurrent use; of one
// request it keeps for the next of the same conversation only the bytes
// of its body that the next may reuse (prefix.go), which it checks first.
type Provider struct {
	ep   endpoint
	cfg  Config
	kept *keptBodies
}

// keyVar is the variable New names when there is no key.
const keyVar = "GEMINI_API_KEY"

// New returns the wire, or an error naming the variables to set when there
// is no API key.
func New(cfg Config) (*Provider, error) {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("GOOGLE_API_KEY") // the SDK's order: it wins
	}
	ep, err := provider.Endpoint{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, MaxRetries: cfg.MaxRetries}.
		FromEnv("Gemini", keyVar, "GOOGLE_GEMINI_BASE_URL", "(or GOOGLE_API_KEY)")
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	address := ep.BaseURL
	if address == "" {
		address = defaultBaseURL
	}
	if !strings.HasSuffix(address, "/") {
		address += "/"
	}
	base, err := url.Parse(address)
	if err != nil {
		return nil, fmt.Errorf("gemini: the base URL %q (Config.BaseURL or GOOGLE_GEMINI_BASE_URL): %w", ep.BaseURL, err)
	}
	p := &Provider{cfg: cfg, kept: &keptBodies{}, ep: endpoint{base: base, version: cfg.apiVersion(),
		headers: sdkHeaders(ep.APIKey), client: hc, gate: ratewait.New(cfg.Limiter, "gemini", ratelimit.Identity(ep.APIKey))}}
	if ep.MaxRetries > 0 || cfg.RetryFor > 0 {
		p.ep.retry = &retryPolicy{attempts: ep.MaxRetries + 1, retryFor: max(0, cfg.RetryFor), statuses: retried, initial: 1, jitter: 1}
		if cfg.RetryDelay > 0 {
			p.ep.retry.initial, p.ep.retry.jitter = cfg.RetryDelay.Seconds(), 0
		}
	}
	return p, nil
}

// retried are the statuses retried before any output, as on the other
// wires: 408, 409, 429, 5xx and 529.
var retried = []int32{408, 409, 429, 500, 502, 503, 504, 529}

// cacheSettings says how the wire marks the prompt cache: it does not;
// Gemini's implicit caching reads the longest prefix it saw by itself.
const cacheSettings = "gemini: implicit caching (nothing marked)"

// CacheSettings says how the wire marks the prompt cache, for the agent to
// store with a conversation (provider.CacheDescriber).
func (p *Provider) CacheSettings() string { return cacheSettings }

// WireName is "gemini" (provider.Named).
func (p *Provider) WireName() string { return "gemini" }

// Complete sends the request and reads the answer.
func (p *Provider) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	stream := !p.cfg.NoStream
	address, err := p.ep.url(req.Model, stream)
	if err != nil {
		return provider.Response{}, err
	}
	body, err := bodyWith(req, Options{Thoughts: p.cfg.Thoughts}, p.kept)
	if err != nil {
		return provider.Response{}, err
	}
	req.Sent(body)
	if p.ep.gate != nil {
		// the key's model, for the limiter (docs/ratelimits.md)
		ctx = ratelimit.WithModel(ctx, req.Model)
	}
	var w send.Writes
	resp, err := p.ep.post(w.Trace(ctx), address, body)
	if err != nil {
		return provider.Response{}, err
	}
	a := accumulator{onText: onText, onThinking: req.OnThinking}
	if stream {
		err = readStream(resp, &a)
	} else {
		err = readWhole(resp.Body, &a)
	}
	resp.Body.Close()
	if err != nil {
		p.observeStreamError(ctx, address, err)
		return provider.Response{}, err
	}
	if a.stop == "" {
		if stream {
			return provider.Response{}, fmt.Errorf("gemini: %w (no finishReason)", provider.ErrStreamCut)
		}
		a.stop = "stop"
	}
	if w.Done() {
		// answered and written: the conversation's next body may be
		// written into this one's memory
		p.kept.release(req, body)
	}
	return a.response(), nil
}

// observeStreamError tells the rate limiter, if any, of err when it is
// the API's error object read from an answer of 200 (an error event in
// the stream, or the whole answer: RESOURCE_EXHAUSTED with its
// RetryInfo, UNAVAILABLE), under the key the request to address waited
// under: the gate observed the 200, not what its body said after
// (docs/ratelimits.md, "Refusals inside a stream"). The object is given
// to the limiter whole, as an error answer's body; its message is not
// kept.
func (p *Provider) observeStreamError(ctx context.Context, address string, err error) {
	var apiErr APIError
	if p.ep.gate == nil || !errors.As(err, &apiErr) {
		return
	}
	u, uerr := url.Parse(address)
	event, jerr := json.Marshal(struct {
		Error APIError `json:"error"`
	}{apiErr})
	if uerr != nil || jerr != nil {
		return
	}
	provider.ObserveStreamEvent(ctx, p.cfg.Limiter, p.ep.gate.Key(ctx, u), event)
}

// describe keeps the provider's own message in the error; a refusal of the
// request as too long is a provider.TooLongError around it.
func describe(err error) error {
	var apiErr APIError
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if apiErr.Status != "" {
			msg += " (" + apiErr.Status + ")"
		}
		w := provider.StatusError("gemini", apiErr.Code, msg, err)
		if tl := tooLong(apiErr.Code, apiErr.Message); tl != nil {
			tl.Err = w
			return tl
		}
		return w
	}
	return fmt.Errorf("gemini: %w", err)
}

// item is one part of the answer as it builds up: streamed text and
// thought chunks run together into one part each, until a part of
// another kind or a signature ends them.
type item struct {
	kind     string // "text", "thought" or "call"
	text     strings.Builder
	sig      string // the thought signature, base64 as the API sends it
	id, name string
	args     string
}

type accumulator struct {
	items      []*item
	usage      history.Usage
	stop       string
	onText     func(string)
	onThinking func(string)
}

// add reads one answer (or one chunk of a streamed one).
func (a *accumulator) add(resp *chunk) error {
	if u := resp.UsageMetadata; u != nil {
		cached := u.CachedContentTokenCount
		a.usage = history.Usage{Input: u.PromptTokenCount - cached, CacheRead: cached,
			Output: u.CandidatesTokenCount + u.ThoughtsTokenCount}
	}
	if len(resp.Candidates) == 0 {
		if f := resp.PromptFeedback; f != nil && f.BlockReason != "" {
			return &provider.BlockedError{Reason: strings.ToLower(f.BlockReason), Err: fmt.Errorf("gemini: the prompt was blocked (%s): %s", f.BlockReason, f.BlockReasonMessage)}
		}
		return nil
	}
	c := resp.Candidates[0]
	if c.FinishReason != "" && c.FinishReason != "FINISH_REASON_UNSPECIFIED" {
		a.stop = strings.ToLower(c.FinishReason)
	}
	if c.Content == nil {
		return nil
	}
	for _, p := range c.Content.Parts {
		sig, text := p.ThoughtSignature, string(p.Text)
		switch {
		case p.FunctionCall != nil:
			args, err := callArgs(p.FunctionCall.Args)
			if err != nil {
				return fmt.Errorf("gemini: the arguments of a call of %s: %w", p.FunctionCall.Name, err)
			}
			id := p.FunctionCall.ID
			if id == "" {
				id = localID()
			}
			a.items = append(a.items, &item{kind: "call", sig: sig, id: id, name: p.FunctionCall.Name, args: args})
		case p.Thought:
			it := a.open("thought")
			it.text.WriteString(text)
			it.sig = sig
			if a.onThinking != nil && text != "" {
				a.onThinking(result.WellFormed(text))
			}
		case text != "" || sig != "":
			it := a.open("text")
			it.text.WriteString(text)
			it.sig = sig
			if a.onText != nil && text != "" {
				a.onText(result.WellFormed(text))
			}
		}
	}
	return nil
}

// callArgs is a call's arguments as the wire stores them: the object
// re-encoded as genai's map of it encodes (keys sorted, compact, `<`, `>`
// and `&` as themselves; a number beyond 2^53 loses precision, as in
// genai), "{}" for none or null. Arguments that are not an object are an
// error, as genai refuses them.
func callArgs(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "{}" {
		return "{}", nil // what the map round trip gives, without it
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("%.200q: %w", raw, err)
	}
	if args == nil {
		return "{}", nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// open is the part of kind that text runs on into: the last one, when it
// is of that kind and no signature closed it yet, else a new one.
func (a *accumulator) open(kind string) *item {
	if n := len(a.items); n > 0 && a.items[n-1].kind == kind && a.items[n-1].sig == "" {
		return a.items[n-1]
	}
	it := &item{kind: kind}
	a.items = append(a.items, it)
	return it
}

// localID is an id for a call the API sent without one: unique, so that
// spill files and results tie to it, and never sent (localPrefix).
func localID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return localPrefix + hex.EncodeToString(b[:])
}

// response is the assistant message: text made well formed, signatures on
// the parts they came on, thoughts as reasoning parts whose Raw is the
// part as the API sent it (its chunks run together).
func (a *accumulator) response() provider.Response {
	msg := history.Message{Role: history.Assistant, Usage: &a.usage}
	if len(a.items) > 0 {
		msg.Parts = make([]history.Part, 0, len(a.items)) // nil for none, as before
	}
	for _, it := range a.items {
		switch it.kind {
		case "call":
			part := provider.ToolCall(it.id, it.name, it.args)
			if it.sig != "" {
				part.Wire, part.Signature = wire, it.sig
			}
			msg.Parts = append(msg.Parts, part)
		case "thought":
			text := result.WellFormed(it.text.String())
			var e encoder
			e.raw(`{"text":`)
			e.str(text)
			e.raw(`,"thought":true`)
			if it.sig != "" {
				e.raw(`,"thoughtSignature":`)
				e.str(it.sig)
			}
			e.raw("}")
			msg.Parts = append(msg.Parts, history.Part{Type: history.ReasoningPart, Wire: wire, Text: text, Raw: e.buf})
		case "text":
			text := result.WellFormed(it.text.String())
			switch {
			case text != "":
				part := history.Part{Type: history.TextPart, Text: text}
				if it.sig != "" {
					part.Wire, part.Signature = wire, it.sig
				}
				msg.Parts = append(msg.Parts, part)
			case it.sig != "":
				// A signature on a part of no text (a stream's last chunk)
				// after a call: kept, and sent back, as it came.
				var e encoder
				e.raw(`{"text":"","thoughtSignature":`)
				e.str(it.sig)
				e.raw("}")
				msg.Parts = append(msg.Parts, history.Part{Type: history.ReasoningPart, Wire: wire, Raw: e.buf})
			}
		}
	}
	return provider.Response{Message: msg, StopReason: a.stop, Refused: refusedFinish(a.stop)}
}

// refusedFinish reports whether a finish reason, lowercased, says the
// answer was stopped for what it held or would hold — safety, prohibited
// content, a blocklist term, personal data, Model Armor — rather than for
// its length or a malformed call. RECITATION is not one: withholding the
// results does not change what the model would recite.
func refusedFinish(stop string) bool {
	switch stop {
	case "safety", "prohibited_content", "blocklist", "spii", "image_safety", "image_prohibited_content", "model_armor":
		return true
	}
	return false
}
