// Package provider defines what the agent asks of a model and what it gets
// back, independent of any wire: a Request built from the stored
// conversation, and a Response holding the assistant's message. Each wire
// turns a Request into its provider's HTTP request and reads the answer:
// provider/anthropic (Anthropic's Messages API), provider/bedrock,
// provider/vertex and provider/googlecloud (the same API on Amazon Bedrock,
// Google Vertex AI and Anthropic's gateway on Google Cloud), provider/openai (Chat
// Completions), provider/responses (OpenAI's Responses API) and
// provider/gemini (the Gemini API). Whatever the wire, a refusal of a
// request longer than the model's context window is a TooLongError, so
// that the agent can make room and try again; a refusal of what a request
// holds is Response.Refused or a BlockedError; a provider's error answer is
// a WireError and a request that got no answer a ConnectionError, each
// wrapping its cause; retries are heard through WithRetryNotice; and a wire
// may say how it marks the prompt cache (CacheDescriber), how long its
// entries live (CacheLifetime) and its name (Named). What the wires share to send and read (the request poster, the
// stream reader, the JSON scan, the kept request starts) is under
// internal/, no promise to an embedder (docs/embedding.md, "What is
// public").
//
// It must not store anything or run tools, and a wire must build the same
// request bytes from the same Request every time: that is what keeps the
// provider's prompt cache hitting (contract §7, §8).
package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
)

// Tool is a tool definition as sent to the model.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the input, sent as these bytes.
	InputSchema json.RawMessage
}

// Request is one request to a model.
type Request struct {
	Model  string
	System string
	Tools  []Tool // in the order they are sent: a stable one
	// Messages are the conversation's messages in order. A record whose
	// Role is history.Context (a stored decision, not a message) is never
	// sent: every wire skips it as if it were absent, so a request with
	// records among its messages is byte for byte the one without them.
	Messages  []history.Message
	MaxTokens int
	// OnThinking, when set, is called with the model's reasoning text as
	// it streams in, on wires that stream it; it is not sent. (The
	// answer's text goes to Complete's onText.)
	OnThinking func(string) `json:"-"`
	// OnBody, when set, is called with the request body exactly as the
	// wire hands it to HTTP, before it is sent (once per Complete, not
	// per retry: a retry sends the same bytes). The agent keeps it for
	// the API (history.Requests, contract §13). The callee must not
	// change it, and copies what it keeps past the conversation's next
	// request: a wire may write that request's body into the same memory
	// (Prefixes.Release). On Bedrock and Vertex too it is the body the platform
	// receives: the wire writes it as the platform takes it, the model
	// (and stream) in the URL, anthropic_version at its end.
	OnBody func(body []byte) `json:"-"`
	// CacheKey names the conversation the request belongs to, the same
	// for every request of it (the agent sets the conversation's id), so
	// that a provider that routes its prompt cache by a key of the
	// caller's sends the requests of one conversation to one cache. Only
	// the OpenAI Responses wire sends it (as prompt_cache_key, hashed when
	// longer than the API takes); the other wires ignore it. It must not
	// change between the requests of a conversation, or carry anything
	// secret: it leaves the machine.
	CacheKey string
}

// Sent tells OnBody, when set, that body is what the wire sends for r.
// Every wire calls it once per Complete, with the bytes it hands to HTTP.
func (r Request) Sent(body []byte) {
	if r.OnBody != nil {
		r.OnBody(body)
	}
}

// Response is the model's answer to a Request.
type Response struct {
	// Message is the assistant message: its text and tool call parts, and
	// the request's usage.
	Message history.Message
	// StopReason is why the model stopped, in the wire's words
	// ("end_turn", "tool_use", "max_tokens", "stop", "tool_calls", ...).
	StopReason string
	// Refused is set by the wire when StopReason is its provider's word
	// for a refusal — the model, or a filter in front of it, would not go
	// on with what the request holds: Anthropic's "refusal" (and Bedrock's,
	// Vertex's and the Google Cloud gateway's, which are Anthropic's),
	// Chat Completions' "content_filter", the Responses API's "refusal"
	// content or an answer incomplete for "content_filter", Gemini's
	// safety finish reasons (docs/agent.md, "The refusal guard"). It lets
	// the agent test one thing whatever the wire; a wire must not set it
	// for any other stop (a cut by max_tokens is no refusal).
	Refused bool
}

// Provider sends requests to a model.
type Provider interface {
	// Complete sends req, calls onText with the assistant's text as it
	// streams in (onText may be nil), and returns the whole answer. Text
	// is made well formed before it is returned or passed on.
	Complete(ctx context.Context, req Request, onText func(string)) (Response, error)
}

// CacheDescriber is a wire that says, in a few words, how it marks the
// provider's prompt cache ("anthropic: cache_control ephemeral on ...",
// "openai: automatic prefix caching"). The agent stores the words with a
// conversation (history.Settings.Cache) so that a resume whose wire marks
// the cache otherwise can say that the cached prefix will not be reused,
// and why. The words change only when the wire's marking does; they must
// not depend on the request, the conversation or the time.
type CacheDescriber interface {
	CacheSettings() string
}

// CacheSettings is p's CacheSettings, or "" when p does not say.
func CacheSettings(p Provider) string {
	if c, ok := p.(CacheDescriber); ok {
		return c.CacheSettings()
	}
	return ""
}

// CacheLifetime is a wire whose prompt cache entries live as long as the
// caller chose (the Anthropic family's --cache-ttl): CacheTTL says how long,
// "1h", or "" for the provider's default. The agent stores it with a
// conversation (history.Settings.CacheTTL), so that a turn sent with
// another lifetime says so. It must not depend on the request, the
// conversation or the time.
type CacheLifetime interface {
	CacheTTL() string
}

// CacheTTL is p's CacheTTL, or "" when p does not say.
func CacheTTL(p Provider) string {
	if c, ok := p.(CacheLifetime); ok {
		return c.CacheTTL()
	}
	return ""
}

// Named is a wire that says its name, the one --provider takes
// ("anthropic", "bedrock", "openai-responses", ...): the agent records it
// with each request it keeps (history.SentRequest.Wire), so that a reader
// of the requests knows which wire's shapes a body is in. The name must
// not change from request to request.
type Named interface {
	WireName() string
}

// WireName is p's WireName, or "" when p does not say.
func WireName(p Provider) string {
	if n, ok := p.(Named); ok {
		return n.WireName()
	}
	return ""
}

// ToolCall is the stored part for a tool call as a wire read it: the name
// made well formed, the arguments kept as the model sent them — in Input
// when they are a JSON object, else (not JSON, or JSON of another kind) in
// Text with Input empty, for the agent to answer with an error result that
// names the problem.
func ToolCall(id, name, args string) history.Part {
	return ToolCallInput(id, name, []byte(args))
}

// ToolCallInput is ToolCall for arguments read as bytes, which it keeps as
// the Part's Input rather than copying them: a wire that reads a round's
// arguments into one buffer hands each call its own part of it (capped,
// so that an append to one Input never writes into the next), and must
// not write to the buffer after.
func ToolCallInput(id, name string, args []byte) history.Part {
	part := history.Part{Type: history.ToolCallPart, CallID: id, Name: result.WellFormed(name)}
	raw := bytes.TrimSpace(args)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	// Arguments are an object on every wire: JSON that is not one ([1],
	// "x", null) is kept as text like JSON that is not valid, so that no
	// wire is ever sent an input it refuses (Anthropic's and Gemini's do).
	if json.Valid(raw) && raw[0] == '{' {
		part.Input = json.RawMessage(raw)
	} else {
		part.Text = result.WellFormed(string(raw))
	}
	return part
}

// DefaultRetries is how many times a wire retries a request that failed
// with 408, 409, 429, 529 or 5xx before any output, when its config says 0.
const DefaultRetries = 4

// Endpoint is where a wire sends requests, with which key, retrying how
// often.
type Endpoint struct {
	APIKey     string
	BaseURL    string // "" means the SDK's default
	MaxRetries int    // 0 means DefaultRetries; below 0, none
}

// FromEnv fills what e leaves empty from the environment variables keyVar
// and baseVar, and the retries from their default. Without a key it fails
// with an error that names keyVar (and hint, when not empty).
func (e Endpoint) FromEnv(wire, keyVar, baseVar, hint string) (Endpoint, error) {
	if e.APIKey == "" {
		e.APIKey = os.Getenv(keyVar)
	}
	if e.APIKey == "" {
		if hint != "" {
			hint = " " + hint
		}
		return e, fmt.Errorf("no %s API key: set %s%s", wire, keyVar, hint)
	}
	if e.BaseURL == "" {
		e.BaseURL = os.Getenv(baseVar)
	}
	switch {
	case e.MaxRetries == 0:
		e.MaxRetries = DefaultRetries
	case e.MaxRetries < 0:
		e.MaxRetries = 0
	}
	return e, nil
}
