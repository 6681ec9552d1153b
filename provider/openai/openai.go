// Package openai is the OpenAI-compatible Chat Completions wire (OpenAI,
// OpenRouter, Ollama, vLLM, the llama.cpp server): it turns a
// provider.Request into a Chat Completions request and reads the answer,
// streamed or whole, as github.com/openai/openai-go/v3 would, without
// linking it (issue 34): the SDK is the tests' reference only.
//
// The body is encoded directly (encode.go), sent by internal/send to the
// target and with the headers the SDK would send (target.go) and its
// retry rules (send.go), an error answer made an *Error as the SDK made
// its own (error.go), the stream read with internal/sse (stream.go), a
// whole answer decoded into the few fields the wire reads (whole.go).
//
// A tool result goes as a tool message with string content, its bytes as
// stored. The wire has no error flag for tool messages: an error result is
// its error text. Images from tools go in one user message right after the
// tool messages of their round. Providers of this wire cache prefixes by
// themselves; the request is built the same way every time so that they
// hit. A refusal of a request longer than the context window is a
// provider.TooLongError (see toolong.go). It must not change what it sends
// between two builds of the same Request, and never sends a
// history.Context record.
package openai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/result"
)

// Config configures the wire. The zero value reads OPENAI_API_KEY and
// OPENAI_BASE_URL from the environment.
type Config struct {
	APIKey     string       // default: $OPENAI_API_KEY
	BaseURL    string       // default: $OPENAI_BASE_URL, else https://api.openai.com/v1/ (the SDK's)
	MaxRetries int          // retries before any output (provider.Endpoint); 0 means 4, -1 none
	HTTPClient *http.Client // default: the SDK's (send.DefaultClient)
	// Limiter, when set, is the rate limiter every attempt of every
	// request waits at before it is sent and every answer is observed by
	// (docs/ratelimits.md): the key is the endpoint's host,
	// ratelimit.Identity of the API key (a platform's account otherwise)
	// and the request's model. nil: no limiter, nothing waits.
	Limiter *ratelimit.Limiter
	// RetryFor, when above 0, bounds the retries before any output by
	// time instead of by MaxRetries: a request is sent again, with
	// jittered exponential backoff, while the time since its first
	// attempt is within it (docs/ratelimits.md, "Retries"). A whole
	// answer (NoStream) is then not retried by the wire at all, as when
	// the SDK sent it: the agent resends it (agent.Agent.RetryFor, set
	// with it). 0: MaxRetries bounds them.
	RetryFor time.Duration
	// NoStream sends non-streaming requests.
	NoStream bool
}

// Provider is the Chat Completions wire.
type Provider struct {
	// send posts streamed requests, whole those for a whole answer
	// (NoStream), as the SDK would (send.go)
	send, whole *send.Sender
	// gate, with Config.Limiter, names the key a request waits under at
	// the Senders' limiter, for what an answer of 200 says after; nil
	// without
	gate   *ratewait.Gate
	cfg    Config
	legacy bool // send max_tokens: the endpoint is not OpenAI's own
	// prefixes keeps the start of each conversation's last body, which
	// the next one begins with (bodyWith).
	prefixes prefix.Cache
}

// New returns the wire, or an error naming the variable to set when there
// is no API key.
func New(cfg Config) (*Provider, error) {
	ep, err := provider.Endpoint{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, MaxRetries: cfg.MaxRetries}.
		FromEnv("OpenAI", "OPENAI_API_KEY", "OPENAI_BASE_URL", "(any value, for a local server that needs none)")
	if err != nil {
		return nil, err
	}
	s, err := Connect(ep, path, cfg.HTTPClient, Limits{Limiter: cfg.Limiter, RetryFor: cfg.RetryFor, Wire: "openai"})
	if err != nil {
		return nil, err
	}
	return &Provider{send: s.Stream, whole: s.Whole, gate: s.Limits.Gate(), cfg: cfg, legacy: !isOpenAI(ep.BaseURL)}, nil
}

// isOpenAI reports whether base is OpenAI's own API ("" is the default,
// which is).
func isOpenAI(base string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	return err == nil && (u.Hostname() == "api.openai.com" || strings.HasSuffix(u.Hostname(), ".openai.azure.com"))
}

// cacheSettings says how the wire marks the prompt cache: it does not; the
// providers of this wire cache the longest prefix they saw by themselves.
const cacheSettings = "openai: automatic prefix caching (nothing marked)"

// CacheSettings says how the wire marks the prompt cache, for the agent to
// store with a conversation (provider.CacheDescriber).
func (p *Provider) CacheSettings() string { return cacheSettings }

// WireName is "openai" (provider.Named).
func (p *Provider) WireName() string { return "openai" }

// Complete sends the request and reads the answer. The body is Body's
// bytes, built on what p kept of the conversation's last body, posted as
// the SDK would post it (send.go: its headers, its retries before any
// output, and *Error for an error answer), so that nothing is
// marshalled again; the stream is read by read, a whole answer
// (NoStream) decoded by decodeCompletion.
func (p *Provider) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	body, err := bodyWith(req, p.legacy, !p.cfg.NoStream, &p.prefixes)
	if err != nil {
		return provider.Response{}, err
	}
	req.Sent(body)
	if p.gate != nil {
		// the key's model, for the limiter (docs/ratelimits.md)
		ctx = ratelimit.WithModel(ctx, req.Model)
	}
	a := accumulator{onThinking: req.OnThinking}
	if p.cfg.NoStream {
		return p.completeWhole(ctx, body, &a, onText)
	}
	var w send.Writes
	resp, err := p.send.PostWritten(ctx, body, nil, &w)
	if err != nil {
		return provider.Response{}, describe(err)
	}
	err = a.read(resp.Body, onText)
	resp.Body.Close()
	if err != nil {
		// an error chunk in the stream of an answer of 200: the gate
		// observed the 200, not it (docs/ratelimits.md, "Refusals
		// inside a stream")
		if p.gate != nil {
			provider.ObserveStreamError(ctx, p.cfg.Limiter, p.gate.Key(ctx, p.send.Target().URL), err)
		}
		return provider.Response{}, err
	}
	if a.stop == "" {
		return provider.Response{}, errNoFinish
	}
	if err := a.errOnlySkipped(); err != nil {
		return provider.Response{}, err
	}
	if w.Done() {
		// answered and written: the conversation's next body may be
		// written into this one's memory
		p.prefixes.Release(req.CacheKey, body)
	}
	return a.response(), nil
}

// completeWhole posts body for a whole answer and reads it into a.
func (p *Provider) completeWhole(ctx context.Context, body []byte, a *accumulator, onText func(string)) (provider.Response, error) {
	raw, err := PostWhole(ctx, p.whole, body)
	if err != nil {
		return provider.Response{}, describe(err)
	}
	c, err := decodeCompletion(raw)
	if err != nil {
		return provider.Response{}, describe(err)
	}
	if err := a.whole(&c); err != nil {
		return provider.Response{}, err
	}
	if text := a.text.String(); onText != nil && text != "" {
		onText(result.WellFormed(text))
	}
	if err := a.errOnlySkipped(); err != nil {
		return provider.Response{}, err
	}
	return a.response(), nil
}

// describe is DescribeError for this wire.
func describe(err error) error { return DescribeError("openai", err, tooLong) }

// DescribeError is the error a wire on the OpenAI API reports for err,
// an error of a Sender's Post or of reading its answer: for an error
// answer (*Error), a provider.WireError named for wire whose message is
// the provider's own error object (or the whole body, when the server put
// its error at the top of it), wrapping the *Error — and, when
// tooLong reads the status and that object as a refusal of the request as
// too long, a provider.TooLongError around it; any other error (a broken
// connection, as a *provider.ConnectionError: provider.Unanswered; a
// cancelled context) prefixed with wire. It is the one home
// of this for the Chat Completions and Responses wires; it must not read
// anything but err.
func DescribeError(wire string, err error, tooLong func(status int, body string) *provider.TooLongError) error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		body := errorBody(apiErr)
		msg := body
		if msg == "" {
			msg = err.Error()
		}
		we := provider.StatusError(wire, apiErr.StatusCode, msg, err)
		if tl := tooLong(apiErr.StatusCode, body); tl != nil {
			tl.Err = we
			return tl
		}
		return we
	}
	return fmt.Errorf("%s: %w", wire, provider.Unanswered(err))
}

// errorBody is the error object of an error answer: the body's "error",
// or, from a server that sends its error at the top of the body (vLLM
// before 0.10: {"object":"error","message":...}), the whole body, which
// the Sender keeps readable in the response.
func errorBody(apiErr *Error) string {
	if raw := strings.TrimSpace(apiErr.RawJSON()); raw != "" {
		return raw
	}
	if apiErr.Response == nil || apiErr.Response.Body == nil {
		return ""
	}
	b, err := io.ReadAll(apiErr.Response.Body)
	apiErr.Response.Body = io.NopCloser(bytes.NewReader(b)) // readable again
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

type call struct {
	id, name string
	args     strings.Builder
}

type accumulator struct {
	text       strings.Builder
	thinking   strings.Builder // from thinking parts (Mistral's reasoning models)
	onThinking func(string)
	skipped    map[string]int // content parts of types the wire does not read, by type
	calls      []*call
	stop       string
	u          history.Usage
}

// think keeps a delta of reasoning and passes it on.
func (a *accumulator) think(d string) {
	a.thinking.WriteString(d)
	if a.onThinking != nil {
		a.onThinking(result.WellFormed(d))
	}
}

// skip counts the content parts of types the wire does not read.
func (a *accumulator) skip(by map[string]int) {
	for k, n := range by {
		if a.skipped == nil {
			a.skipped = map[string]int{}
		}
		a.skipped[k] += n
	}
}

// errOnlySkipped is the error of an answer that held nothing this wire
// reads but content parts of other types: passed over silently, it would
// be an empty answer.
func (a *accumulator) errOnlySkipped() error {
	if len(a.skipped) == 0 || a.text.Len() > 0 || a.thinking.Len() > 0 || len(a.calls) > 0 {
		return nil
	}
	return fmt.Errorf("openai: the answer held only content parts of types this wire does not read (%s)", skipped(a.skipped))
}

// idBefore reports whether a call before the i-th has its id: a server
// that numbers each answer's calls alike, or gives one id twice, would
// have two results answer one id.
func (a *accumulator) idBefore(i int) bool {
	for _, c := range a.calls[:i] {
		if c.id == a.calls[i].id {
			return true
		}
	}
	return false
}

// localPrefix begins the id this wire gives a call the server sent
// without one (Gemini's OpenAI-compatible endpoint sends "id":"", some
// local servers none) or with one an earlier call of the answer has.
const localPrefix = "call_myelin_"

// localID is an id for such a call: unique, stored with the call and sent
// back as its id and its result's tool_call_id, as the server's own would
// be, so that the request after a restart is the same.
func localID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return localPrefix + hex.EncodeToString(b[:])
}

// setUsage keeps a completion's usage: its prompt tokens less the cached
// ones as input.
func (a *accumulator) setUsage(prompt, completion, cached int) {
	a.u = history.Usage{Input: prompt - cached, Output: completion, CacheRead: cached}
}

func (a *accumulator) response() provider.Response {
	msg := history.Message{Role: history.Assistant, Usage: &a.u}
	if n := len(a.calls) + 2; a.text.Len() > 0 || a.thinking.Len() > 0 || len(a.calls) > 0 {
		// one allocation, not one a doubling; nil for none, as before
		msg.Parts = make([]history.Part, 0, n)
	}
	if t := result.WellFormed(a.thinking.String()); t != "" {
		// for people (history show, OnThinking): no Raw, so never sent back
		msg.Parts = append(msg.Parts, history.Part{Type: history.ReasoningPart, Wire: "openai", Text: t})
	}
	if t := result.WellFormed(a.text.String()); t != "" {
		msg.Parts = append(msg.Parts, history.Part{Type: history.TextPart, Text: t})
	}
	for i, c := range a.calls {
		if c.id == "" || a.idBefore(i) {
			c.id = localID()
		}
		msg.Parts = append(msg.Parts, provider.ToolCall(c.id, c.name, c.args.String()))
	}
	// "content_filter": the provider's filter stopped the answer
	return provider.Response{Message: msg, StopReason: a.stop, Refused: a.stop == "content_filter"}
}
