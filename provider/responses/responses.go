// Package responses is the OpenAI Responses API wire (POST /v1/responses):
// it turns a provider.Request into a Responses request, sent as
// github.com/openai/openai-go/v3 would send it (provider/openai's
// Senders; the SDK is not linked, the tests' reference only), and reads
// the answer, streamed or not.
//
// Nothing depends on state kept by OpenAI: every request has "store":
// false and carries the whole conversation as input items, and asks for
// "reasoning.encrypted_content", so that the reasoning items of a
// reasoning model come back with their encrypted content; they are stored
// (history.ReasoningPart, Wire "openai-responses", Raw the item as it is
// sent back) and sent back in place, byte for byte, in every later
// request, which is how the model keeps its reasoning across a tool loop
// and a restart. A tool result goes as a function_call_output whose output
// is the result's text as a plain string, its bytes as stored (contract
// §1, §8); a result with images as a list of an input_text part and
// input_image parts, which the API takes in a function_call_output. The
// wire has no error flag for tool output: an error result is its text.
// Requests name their conversation in prompt_cache_key
// (provider.Request.CacheKey), so that OpenAI routes them to one prompt
// cache. A refusal of a request longer than the context window is a
// provider.TooLongError (see toolong.go).
//
// It must not change what it sends between two builds of the same
// Request, never sends a history.Context record, and never sends the
// reasoning of another wire.
package responses

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/openai"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/result"
)

// Wire is the name of this wire: the Wire of the reasoning parts it
// stores, and the only reasoning it sends back.
const Wire = "openai-responses"

// Config configures the wire. The zero value reads OPENAI_API_KEY and
// OPENAI_BASE_URL from the environment, and sends no reasoning settings
// (the model's own defaults).
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
	// ReasoningEffort, when set, is sent as reasoning.effort ("minimal",
	// "low", "medium", "high", ... as the model takes them).
	ReasoningEffort string
	// ReasoningSummary, when set, asks for summaries of the reasoning
	// ("auto", "concise", "detailed"): they stream to
	// provider.Request.OnThinking and are stored as the reasoning's
	// readable text. OpenAI gives them only to verified organisations; a
	// model that does not reason refuses any reasoning setting.
	ReasoningSummary string
	// NoEncryptedReasoning leaves "reasoning.encrypted_content" out of
	// "include", for an endpoint or model that refuses it; reasoning is
	// then not kept across requests.
	NoEncryptedReasoning bool
}

// Provider is the Responses API wire.
type Provider struct {
	// send posts streamed requests, whole those for a whole answer
	// (NoStream), as the SDK would (openai.Connect)
	send, whole *send.Sender
	// gate, with Config.Limiter, names the key a request waits under at
	// the Senders' limiter, for what an answer of 200 says after; nil
	// without
	gate *ratewait.Gate
	cfg  Config
	// the heads of recent requests and the starts of recent
	// conversations' bodies, to build the next bodies on (prefix.go)
	kept *kept
}

// New returns the wire, or an error naming the variable to set when there
// is no API key.
func New(cfg Config) (*Provider, error) {
	ep, err := provider.Endpoint{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, MaxRetries: cfg.MaxRetries}.
		FromEnv("OpenAI", "OPENAI_API_KEY", "OPENAI_BASE_URL", "")
	if err != nil {
		return nil, err
	}
	s, err := openai.Connect(ep, "responses", cfg.HTTPClient, openai.Limits{Limiter: cfg.Limiter, RetryFor: cfg.RetryFor, Wire: Wire})
	if err != nil {
		return nil, err
	}
	return &Provider{send: s.Stream, whole: s.Whole, gate: s.Limits.Gate(), cfg: cfg, kept: &kept{}}, nil
}

// maxCacheKey is the longest prompt_cache_key the API takes.
const maxCacheKey = 64

// CacheKey is the prompt_cache_key sent for a Request's CacheKey: the key
// itself when it is printable ASCII of at most 64 bytes (a conversation id
// is), else "myelin-" and the first 57 hex digits of its SHA-256, which
// fits; "" for "".
func CacheKey(key string) string {
	if key == "" {
		return ""
	}
	plain := len(key) <= maxCacheKey
	for i := 0; plain && i < len(key); i++ {
		plain = key[i] > 0x20 && key[i] < 0x7f
	}
	if plain {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return ("myelin-" + hex.EncodeToString(sum[:]))[:maxCacheKey]
}

// Body is the request body for req under cfg, the whole of what is sent:
// "model", "tools", "instructions" (the system prompt) and "input" first —
// the prefix the prompt cache reads, in that order — then
// "max_output_tokens", "store": false, "include", "prompt_cache_key",
// "reasoning" and, when stream is set, "stream": true last. The same
// Request gives the same bytes, every time.
func Body(req provider.Request, cfg Config, stream bool) ([]byte, error) {
	return bodyWith(req, cfg, stream, nil)
}

// bodyWith is Body, its start taken from what k keeps of req's
// conversation where req begins with it (prefix.go), and the start of
// this body kept there for the next; a nil k encodes afresh. Its bytes
// are always Body's (TestCachedBodiesAreBodysBytes).
func bodyWith(req provider.Request, cfg Config, stream bool, k *kept) ([]byte, error) {
	var (
		lead string         // the encoded head, when k keeps heads
		pre  *prefix.Prefix // the kept start this body is built on
	)
	if k != nil {
		var err error
		if lead, err = k.heads.of(req); err != nil {
			return nil, err
		}
		if req.CacheKey != "" {
			pre = k.prefixes.GetPartial(req.CacheKey, lead, req.Messages)
		}
	}
	first := 0 // the first message encoded here
	size := 256 + len(lead)
	if pre != nil {
		first = pre.Len()
		size += len(pre.Bytes()) - len(lead)
	} else if k == nil {
		size += len(req.System) + len(req.Model)
		for _, t := range req.Tools {
			size += 64 + len(t.Name) + len(t.Description) + len(t.InputSchema)
		}
	}
	rest := req.Messages[first:]
	for _, m := range rest {
		size += sizeHint(m)
	}
	var e encoder
	head := len(lead) // where the input items start
	switch {
	case pre != nil:
		// the prefix's bytes, in the memory of the conversation's last
		// body when it was given back (Prefixes.Release)
		e.buf = k.prefixes.Buffer(req.CacheKey, pre, size)
	case k != nil:
		e.buf = append(hugepage.Make[byte](0, size), lead...) // huge pages at a run's start (internal/hugepage)
	default: // Body's: not a run's
		e.buf = make([]byte, 0, size)
		if err := e.head(req); err != nil {
			return nil, err
		}
		head = len(e.buf)
	}
	sep := ""
	if len(e.buf) > head { // the prefix holds an item
		sep = ","
	}
	var ends []int // where each message's items end, for GetPartial
	if k != nil && req.CacheKey != "" {
		ends = make([]int, 0, len(rest))
	}
	for _, m := range rest {
		if !m.IsRecord() { // a stored decision, never sent: as if absent
			sep = e.items(m, sep)
		}
		if ends != nil {
			ends = append(ends, len(e.buf))
		}
	}
	cut := len(e.buf)
	e.raw(`],"max_output_tokens":`)
	e.buf = strconv.AppendInt(e.buf, int64(max(1, req.MaxTokens)), 10)
	e.raw(`,"store":false`)
	if !cfg.NoEncryptedReasoning {
		e.raw(`,"include":["reasoning.encrypted_content"]`)
	}
	if key := CacheKey(req.CacheKey); key != "" {
		e.raw(`,"prompt_cache_key":`)
		e.str(key)
	}
	if cfg.ReasoningEffort != "" || cfg.ReasoningSummary != "" {
		e.raw(`,"reasoning":{`)
		if cfg.ReasoningEffort != "" {
			e.raw(`"effort":`)
			e.str(cfg.ReasoningEffort)
			if cfg.ReasoningSummary != "" {
				e.raw(",")
			}
		}
		if cfg.ReasoningSummary != "" {
			e.raw(`"summary":`)
			e.str(cfg.ReasoningSummary)
		}
		e.raw("}")
	}
	if stream {
		e.raw(`,"stream":true`)
	}
	e.raw("}")
	if k != nil && req.CacheKey != "" {
		k.prefixes.Put(req.CacheKey, lead, pre, rest, e.buf[:cut:cut], "", ends...)
	}
	return e.buf, nil
}

// head encodes what comes before the input items: "model", "tools",
// "instructions", and the opening of "input".
func (e *encoder) head(req provider.Request) error {
	e.raw(`{"model":`)
	e.str(req.Model)
	if len(req.Tools) > 0 {
		e.raw(`,"tools":[`)
		for i, t := range req.Tools {
			schema, err := schemaJSON(t.InputSchema)
			if err != nil {
				return fmt.Errorf("tool %s: its input schema is not a JSON object: %w", t.Name, err)
			}
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"type":"function","name":`)
			e.str(t.Name)
			e.raw(`,"description":`)
			e.str(t.Description)
			e.raw(`,"parameters":`)
			e.buf = append(e.buf, schema...)
			e.raw(`,"strict":false}`)
		}
		e.raw("]")
	}
	if req.System != "" {
		e.raw(`,"instructions":`)
		e.str(req.System)
	}
	e.raw(`,"input":[`)
	return nil
}

// cacheSettings says how the wire marks the prompt cache: it names the
// conversation in prompt_cache_key, and OpenAI caches the longest prefix
// it saw by itself.
const cacheSettings = "openai-responses: automatic prefix caching, prompt_cache_key per conversation"

// CacheSettings says how the wire marks the prompt cache, for the agent to
// store with a conversation (provider.CacheDescriber).
func (p *Provider) CacheSettings() string { return cacheSettings }

// WireName is Wire, "openai-responses" (provider.Named).
func (p *Provider) WireName() string { return Wire }

// Complete sends the request and reads the answer. The body is Body's
// bytes, built on what p kept of the conversation's last body, posted by
// internal/send with the SDK's headers, retries before any output and
// *openai.Error for an error answer (openai.Connect), so that nothing is
// marshalled or patched again; the answer is read by read (streamed) or
// decoded into the few fields the wire reads. A streamed
// body answered whole and written by every attempt (send.Writes) is
// given back (Prefixes.Release): the conversation's next body may be
// written into it.
func (p *Provider) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	body, err := bodyWith(req, p.cfg, !p.cfg.NoStream, p.kept)
	if err != nil {
		return provider.Response{}, err
	}
	req.Sent(body)
	if p.gate != nil {
		// the key's model, for the limiter (docs/ratelimits.md)
		ctx = ratelimit.WithModel(ctx, req.Model)
	}
	a := accumulator{onText: onText, onThinking: req.OnThinking}
	if p.cfg.NoStream {
		raw, err := openai.PostWhole(ctx, p.whole, body)
		if err != nil {
			return provider.Response{}, describe(err)
		}
		var r response
		if err := json.Unmarshal(raw, &r); err != nil {
			return provider.Response{}, fmt.Errorf("openai-responses: a malformed response %.200q: %w", raw, err)
		}
		if err := a.finish(&r); err != nil {
			// a failed response, answered 200
			p.observeFailure(ctx, err)
			return provider.Response{}, err
		}
		resp := a.response()
		for _, part := range resp.Message.Parts {
			if part.Type == history.TextPart && onText != nil {
				onText(part.Text)
			}
		}
		return resp, nil
	}
	// streamed: posted as the SDK would post it (internal/send;
	// TestTheWireSendsWhatTheSDKSends)
	var w send.Writes
	resp, err := p.send.PostWritten(ctx, body, nil, &w)
	if err != nil {
		return provider.Response{}, describe(err)
	}
	err = a.read(resp.Body)
	resp.Body.Close()
	if err != nil {
		p.observeFailure(ctx, err)
		return provider.Response{}, err
	}
	if !a.done {
		return provider.Response{}, fmt.Errorf("openai-responses: %w (no response.completed)", provider.ErrStreamCut)
	}
	if w.Done() {
		// answered and written: the conversation's next body may be
		// written into this one's memory
		p.kept.prefixes.Release(req.CacheKey, body)
	}
	return a.response(), nil
}

// observeFailure tells the rate limiter, if any, of err when it is a
// refusal or a fault that came inside an answer of 200 — an error event
// or a failed response (rate_limit_exceeded, server_error) — under the
// key the request waited under: the gate observed the 200, not what its
// body said after (docs/ratelimits.md, "Refusals inside a stream").
func (p *Provider) observeFailure(ctx context.Context, err error) {
	if p.gate != nil {
		provider.ObserveStreamError(ctx, p.cfg.Limiter, p.gate.Key(ctx, p.send.Target().URL), err)
	}
}

// describe is openai.DescribeError for this wire: only a 400 is read as
// too long.
func describe(err error) error {
	return openai.DescribeError(Wire, err, func(status int, body string) *provider.TooLongError {
		if status != http.StatusBadRequest {
			return nil
		}
		return tooLong([]byte(body))
	})
}

// Reasoning is a reasoning part as this wire stores it, from an output
// item of type "reasoning": Raw is the item as it is sent back —
// {"type":"reasoning","summary":[...],"encrypted_content":"..."}, its
// summary parts as they came and without the item's id and status, which
// refer to OpenAI's stored items (with "store": false there are none, and
// the API refuses an input item whose id it cannot find) — and Text the
// summary's texts (or, from a model that gives its reasoning text, that
// text) joined by blank lines. An item without encrypted content cannot be
// sent back (the model's reasoning is not in it): its part has no Raw and
// is kept for people only.
func Reasoning(summary, content []string, encrypted string, hasEncrypted bool) history.Part {
	text := summary
	if len(text) == 0 {
		text = content
	}
	joined := ""
	for i, t := range text {
		if i > 0 {
			joined += "\n\n"
		}
		joined += t
	}
	part := history.Part{Type: history.ReasoningPart, Wire: Wire, Text: result.WellFormed(joined)}
	if !hasEncrypted {
		return part
	}
	e := encoder{}
	e.raw(`{"type":"reasoning","summary":[`)
	for i, s := range summary {
		if i > 0 {
			e.raw(",")
		}
		e.raw(`{"type":"summary_text","text":`)
		e.str(s)
		e.raw("}")
	}
	e.raw(`],"encrypted_content":`)
	e.str(encrypted)
	e.raw("}")
	part.Raw = json.RawMessage(e.buf)
	return part
}

// Text is an assistant text part as this wire stores it, from a message
// item: with its phase ("commentary", "final_answer"), which gpt-5.3-codex
// and later models want back on every assistant message, kept as Raw (the
// phase as a JSON string) with Wire, so that only this wire sends it. A
// message without a phase is a plain text part, as before phases were.
func Text(text, phase string) history.Part {
	p := history.Part{Type: history.TextPart, Text: text}
	if phase != "" {
		p.Wire = Wire
		p.Raw = jsonstring.Append(nil, phase, false)
	}
	return p
}
