// Package anthropic is the Anthropic Messages wire: it turns a
// provider.Request into a Messages API request, posts it with the headers
// and retry rules of anthropic-sdk-go/v2, which it no longer links
// (target.go, send.go; the SDK is a test dependency that holds the two
// equal), and reads the answer itself: streamed (stream.go, scan.go;
// Bedrock's event stream in eventstream.go and frame.go) or whole
// (whole.go), an error answer as the SDK's error (apierror.go).
//
// A text tool result goes in the string form of `content` (its bytes as
// stored); an error result carries `is_error`; images go as native image
// blocks. With Config.Thinking on, the request asks for extended thinking,
// and the answer's thinking and redacted_thinking blocks are stored as
// history.ReasoningPart (Raw: the block, signature included) in the order
// they came, then sent back byte for byte in every later request, as the
// API requires inside a tool loop (thinking.go). Prompt caching marks the stable prefix — the last tool, the
// system prompt — and rolls a breakpoint over the two newest user messages,
// four at most, each for the lifetime Config.CacheTTL asks for (the API's
// five minutes by default, or an hour: cachettl.go). A refusal of a request longer than the context window is a
// provider.TooLongError (see toolong.go). It must not change what it sends
// between two builds of the same Request, and never sends a
// history.Context record.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/internal/ratewait"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/result"
)

// Config configures the wire. The zero value reads ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL from the environment.
type Config struct {
	APIKey     string       // default: $ANTHROPIC_API_KEY
	BaseURL    string       // default: $ANTHROPIC_BASE_URL, else https://api.anthropic.com/
	MaxRetries int          // retries before any output (provider.Endpoint); 0 means 4, -1 none
	HTTPClient *http.Client // default: the SDK's default (send.DefaultClient)
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
	// answer (NoStream) is then not retried by the
	// wire at all: the agent resends it (agent.Agent.RetryFor, set with
	// it). 0: MaxRetries bounds them.
	RetryFor time.Duration
	// NoStream sends non-streaming requests; the answer then arrives whole.
	NoStream bool
	// Thinking is the extended thinking requests ask for; the zero value,
	// none. New refuses a Thinking that Check refuses; each request's
	// max_tokens is checked against its budget when it is built.
	Thinking Thinking
	// CacheTTL is how long the prompt cache keeps what the requests'
	// breakpoints mark: "" or CacheTTL5m, the API's default five minutes
	// (no ttl sent), or CacheTTL1h. New refuses any other.
	CacheTTL CacheTTL
}

// Provider is the Anthropic wire.
type Provider struct {
	// send posts streamed requests, whole the requests for a whole
	// answer (NoStream), as the SDK would have (send.go), on the
	// first-party API and on every platform (platform.go)
	send, whole *send.Sender
	// conn is what they were made from, for WithThinking to make them
	// again with its betas
	conn connection
	// route, on a platform, points each attempt at the platform and
	// authorizes it (its Send or Authorize)
	route func(*http.Request, Route) error
	// eventStream: the platform streams AWS event stream frames, read
	// as they come (eventstream.go)
	eventStream bool
	cfg         Config
	heads       *headCache // the last head encoded (head.go), shared by WithThinking's copies
	// the first messages' bytes of recent conversations (bodyWith),
	// shared by WithThinking's copies (thinking does not change them)
	prefixes *prefix.Cache
	// form, for a platform with Send (platform.go), is how the body is
	// written for it; nil for the first-party API and Google Cloud's
	// gateway, which take the first-party body.
	form *platformForm
	// gate, with Config.Limiter, is a gate of its own over the limiter
	// the Senders wait at: its Key is the key a request waited under, for
	// observeStreamError; nil without a limiter
	gate *ratewait.Gate
}

// New returns the wire, or an error naming the variable to set when there
// is no API key.
func New(cfg Config) (*Provider, error) {
	ep, err := provider.Endpoint{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, MaxRetries: cfg.MaxRetries}.
		FromEnv("Anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "")
	if err != nil {
		return nil, err
	}
	if err := cfg.Thinking.Check(0); err != nil {
		return nil, err
	}
	if err := cfg.CacheTTL.Check(); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	identity := ratelimit.Identity(ep.APIKey)
	conn := connection{
		spec:       targetSpec{base: ep.BaseURL, authorization: "Bearer " + ep.APIKey, env: true},
		httpClient: cfg.HTTPClient, retries: ep.MaxRetries, wire: Wire, identity: identity, sentBetas: true,
	}
	return newWire(cfg, conn)
}

// newWire is the wire sending through conn: New's, or a platform's
// (platform.go), whose requests wait at cfg.Limiter, if any, named by
// conn's wire and identity.
func newWire(cfg Config, conn connection) (*Provider, error) {
	if conn.httpClient == nil {
		conn.httpClient = send.DefaultClient() // one pool of connections for both Senders
	}
	p := &Provider{conn: conn, cfg: cfg, heads: &headCache{}, prefixes: &prefix.Cache{},
		gate: ratewait.New(cfg.Limiter, conn.wire, conn.identity)}
	var err error
	if p.send, p.whole, err = conn.senders(cfg, cfg.Thinking); err != nil {
		return nil, err
	}
	return p, nil
}

// maxBreakpoints is the most cache_control markers one request may hold.
const maxBreakpoints = 4

// Body is the request body for req without thinking: BodyWith(req, stream,
// Thinking{}).
func Body(req provider.Request, stream bool) ([]byte, error) {
	return BodyWith(req, stream, Thinking{})
}

// BodyWith is the request body for req, the whole of what is sent: the
// model, tools, system prompt and thinking encoded as the SDK's types encode them (head.go), the
// messages by this package's encoder (see encode.go), spliced in front. The
// same Request gives the same bytes, every time. It fails, naming the
// numbers, when th does not fit the request (Thinking.Check).
func BodyWith(req provider.Request, stream bool, th Thinking) ([]byte, error) {
	return bodyWith(req, stream, th, "", nil, nil, nil)
}

// bodyWith is BodyWith with the cache breakpoints of lifetime ttl, the head taken from heads when it holds it
// (head.go), and the first messages' bytes from prefixes when it holds
// them for req's conversation; nil caches encode afresh. What is kept is
// `{"messages":[` and the message groups before the first that carries a
// rolling cache breakpoint (which move to the two newest user messages
// each round), never the last group (the next message may join it). A
// non-nil form writes the body as its platform takes it
// (platformbody.go); it needs heads.
func bodyWith(req provider.Request, stream bool, th Thinking, ttl CacheTTL, heads *headCache, prefixes *prefix.Cache, form *platformForm) ([]byte, error) {
	maxTokens := max(1, req.MaxTokens)
	if err := th.Check(maxTokens); err != nil {
		return nil, err
	}
	head, err := heads.head(req, maxTokens, th, ttl)
	if err != nil {
		return nil, err
	}
	if form != nil {
		if head, err = form.head(head, th); err != nil {
			return nil, err
		}
		stream = stream && !form.streamInURL
	}
	// The rolling breakpoints: the newest user message, and the one
	// before, which the previous request wrote to the cache.
	limit := min(2, maxBreakpoints-headMarks(req))
	pre := prefixes.Get(req.CacheKey, "", req.Messages)
	var groups []group
	var msize int // about what the messages encode to (sizeHint)
	if pre != nil {
		// The kept groups are this request's first ones when the first
		// message after them does not join the last of them and the
		// rolling breakpoints all fall after them.
		var users int
		groups, users, msize = groupsOf(req.Messages, pre.Len())
		if len(groups) == 0 || groups[0].role(req.Messages) == pre.Last() || users < limit {
			pre = nil
		}
	}
	if pre == nil {
		groups, _, msize = groupsOf(req.Messages, 0)
	}
	rolling := 0
	for i := len(groups) - 1; i >= 0 && rolling < limit; i-- {
		if groups[i].role(req.Messages) == history.User {
			groups[i].mark = true
			rolling++
		}
	}
	// the messages, a comma a group, the head and a little more
	size := msize + len(groups) + len(head) + 64
	first := 0 // the first message encoded here
	if pre != nil {
		size += len(pre.Bytes())
		first = pre.Len()
	}
	// one allocation, not a dozen doublings (in huge pages at a run's
	// start: internal/hugepage); on a kept prefix, the conversation's last
	// body when it was given back (Release), the prefix's bytes already in
	// place
	e := encoder{mark: ttl.mark()}
	if pre != nil {
		e.buf = prefixes.Buffer(req.CacheKey, pre, size)
	} else {
		e.buf = hugepage.Make[byte](0, size)
	}

	// What the next request of the conversation may reuse: the groups
	// before the first marked one, and never the last (the next message
	// may join it).
	keep := len(groups) - 1
	for i, g := range groups {
		if g.mark {
			keep = i
			break
		}
	}
	if pre == nil {
		e.raw(`{"messages":[`)
	}
	cut := -1
	for i := range groups {
		g := &groups[i]
		if i == keep && (pre != nil || i > 0) {
			cut = len(e.buf)
		}
		if i > 0 || pre != nil {
			e.raw(",")
		}
		e.message(g.role(req.Messages), req.Messages[g.start:g.end], g.mark)
	}
	e.raw("],")
	if stream {
		e.raw(`"stream":true,`)
	}
	e.buf = append(e.buf, head[1:]...) // head is {"max_tokens":...}
	if prefixes != nil && cut > 0 && keep > 0 {
		prefixes.Put(req.CacheKey, "", pre, req.Messages[first:groups[keep].start], e.buf[:cut], groups[keep-1].role(req.Messages))
	}
	return e.buf, nil
}

// group is the messages [start, end) of a request that go as one message:
// consecutive messages of one role (a prompt after tool results the model
// never answered), as the API wants, with the records and empty answers
// among them, which send nothing. Its role is its first message's. Twelve
// bytes, not forty with the role in it: a body of 100,000 messages has
// nearly as many groups, each new memory in a fresh process (~760 page
// faults fewer; the eighth session's pbody branch).
type group struct {
	start, end int32
	mark       bool // a rolling cache breakpoint on its last block
}

// role is g's role, msgs the request's messages.
func (g *group) role(msgs []history.Message) history.Role { return msgs[g.start].Role }

// groupsOf is the groups of msgs[from:], how many of them are the
// user's, and about how many bytes their messages encode to (sizeHint),
// read in the same pass over the messages. Records and messages with
// nothing to send start no group.
func groupsOf(msgs []history.Message, from int) (groups []group, users, size int) {
	// at most a group a message: one allocation, not one a doubling
	groups = make([]group, 0, len(msgs)-from)
	for i := from; i < len(msgs); i++ {
		m := &msgs[i]
		if m.IsRecord() || !sends(m.Parts) {
			continue // a stored decision, or an empty answer: as if absent
		}
		size += sizeHint(m)
		if n := len(groups); n > 0 && msgs[groups[n-1].start].Role == m.Role {
			groups[n-1].end = int32(i + 1)
			continue
		}
		groups = append(groups, group{start: int32(i), end: int32(i + 1)})
		if m.Role == history.User {
			users++
		}
	}
	return groups, users, size
}

// cacheSettings says how Body marks the prompt cache (see its rolling
// breakpoints); it changes only when that does.
const cacheSettings = "anthropic: cache_control ephemeral on the last tool, the system prompt and the last block of the two newest user messages (4 breakpoints at most)"

// CacheSettings says how the wire marks the prompt cache, for the agent to
// store with a conversation (provider.CacheDescriber). With thinking on it
// names the thinking too, since the API invalidates the cached messages
// when the thinking settings change (the tools and system prompt stay
// cached); without, it is the words it always was.
func (p *Provider) CacheSettings() string {
	if th := p.cfg.Thinking; th.On() {
		return cacheSettings + "; " + th.String()
	}
	return cacheSettings
}

// WireName is Wire, "anthropic" (provider.Named).
func (p *Provider) WireName() string { return Wire }

// Body is the body Complete sends for req: BodyWith(req, !NoStream,
// Thinking), byte for byte — on a platform with Send, as that platform
// takes it (platformbody.go) — built from what p kept of the previous
// requests of req's conversation (req.CacheKey) where those still hold.
// Callers must not change the bytes: p may reuse them for the
// conversation's next request.
func (p *Provider) Body(req provider.Request) ([]byte, error) {
	return bodyWith(req, !p.cfg.NoStream, p.cfg.Thinking, p.cfg.CacheTTL, p.heads, p.prefixes, p.form)
}

// Complete sends the request and reads the answer.
func (p *Provider) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	body, err := p.Body(req)
	if err != nil {
		return provider.Response{}, err
	}
	req.Sent(body)
	if p.cfg.Limiter != nil {
		// the key's model, for the limiter (docs/ratelimits.md)
		ctx = ratelimit.WithModel(ctx, req.Model)
	}
	// each attempt routed and authorized on a platform, as the SDK's
	// middleware did
	var each func(*http.Request) error
	if p.route != nil {
		rt := Route{Model: wireModel(req.Model), Stream: !p.cfg.NoStream, Body: body}
		each = func(r *http.Request) error { return p.route(r, rt) }
	}
	if p.cfg.NoStream {
		return p.completeWhole(ctx, req, body, each, onText)
	}
	var w send.Writes
	resp, err := p.send.PostWritten(ctx, body, each, &w)
	if err != nil {
		return provider.Response{}, describe(err)
	}
	answer, err := readAnswer(resp, p.eventStream && awsEventStream(resp), onText, req.OnThinking)
	if err != nil {
		p.observeStreamError(ctx, p.send.Target().URL, err)
	}
	if err == nil && w.Done() {
		// answered and written: the conversation's next body may be
		// written into this one's memory
		p.prefixes.Release(req.CacheKey, body)
	}
	return answer, err
}

// completeWhole posts body for a whole answer (NoStream), each attempt
// given to each when set, and reads it (whole.go) as the SDK read its
// Message: the blocks in order, the usage and the stop reason; the text
// and the thinking handed to onText and req.OnThinking once read.
func (p *Provider) completeWhole(ctx context.Context, req provider.Request, body []byte, each func(*http.Request) error, onText func(string)) (provider.Response, error) {
	// read inside the retries: one that breaks off is sent again, as the
	// SDK sent it again
	res, err := p.whole.PostRead(ctx, body, each)
	if err != nil {
		return provider.Response{}, describe(err)
	}
	read, _ := io.ReadAll(res.Body) // in memory
	_ = res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !jsonMedia(ct) {
		// the SDK's words, for an answer it would not decode
		return provider.Response{}, describe(fmt.Errorf("expected destination type of 'string' or '[]byte' for responses with content-type '%s' that is not 'application/json'", ct))
	}
	msg, err := decodeWhole(read)
	if err != nil {
		return provider.Response{}, describe(err)
	}
	var a accumulator
	for _, c := range msg.blocks {
		a.start(c.kind, c.id, c.name, c.text)
		b := a.blocks[len(a.blocks)-1]
		switch c.kind {
		case "tool_use":
			b.input.Write(c.input)
		case "thinking":
			b.text.WriteString(c.thinking)
			b.signature.WriteString(c.signature)
		case "redacted_thinking":
			b.data = c.data
		}
	}
	u := msg.usage
	a.usage = usageOf(u.input, u.output, u.cacheRead, u.cacheWrite, u.cacheWrite1h)
	a.stop = msg.stopReason
	for _, b := range a.blocks {
		switch {
		case b.kind == "text" && onText != nil:
			onText(result.WellFormed(b.text.String()))
		case b.kind == "thinking" && req.OnThinking != nil && b.text.Len() > 0:
			req.OnThinking(result.WellFormed(b.text.String()))
		}
	}
	return a.response(), nil
}

// observeStreamError tells the rate limiter, if any, of err when it is a
// refusal or a fault an error event brought inside the stream of an
// answer of 200 (an overloaded_error, a rate_limit_error, a Bedrock
// exception frame), under the key the request to u waited under: the
// gate observed the answer's 200 as the stream began, not what the
// stream said after (docs/ratelimits.md, "Refusals inside a stream").
func (p *Provider) observeStreamError(ctx context.Context, u *url.URL, err error) {
	if p.gate == nil || u == nil {
		return
	}
	provider.ObserveStreamError(ctx, p.cfg.Limiter, p.gate.Key(ctx, u), err)
}

// readAnswer reads the streamed answer resp brings, its AWS event
// stream's frames with frames, and closes it.
func readAnswer(resp *http.Response, frames bool, onText, onThinking func(string)) (provider.Response, error) {
	defer resp.Body.Close()
	events := eventsOf(resp, frames)
	defer events.Release()
	return readStream(events, resp, onText, onThinking)
}

// usageOf is the usage the API counted; write1h is how many of the cache
// writes were one-hour ones (usage.cache_creation.ephemeral_1h_input_tokens).
func usageOf(in, out, read, write, write1h int64) history.Usage {
	return history.Usage{Input: int(in), Output: int(out), CacheRead: int(read), CacheWrite: int(write), CacheWrite1h: int(write1h)}
}

// describe keeps the provider's own message in the error, which wraps the
// *Error; a refusal of the request as too long is a provider.TooLongError
// around it.
func describe(err error) error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		msg := strings.TrimSpace(apiErr.RawJSON())
		if msg == "" {
			msg = err.Error()
		}
		wire := provider.StatusError("anthropic", apiErr.StatusCode, msg, err)
		if tl := tooLong(apiErr.StatusCode, apiErr.Message); tl != nil {
			tl.Err = wire
			return tl
		}
		return wire
	}
	return fmt.Errorf("anthropic: %w", provider.Unanswered(err))
}
