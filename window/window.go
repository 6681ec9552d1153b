// Package window owns the model's context window: how big it is, how much
// of it a request may take while leaving room for the answer, and how many
// tokens the next request holds before it is sent (count.go). Later it owns
// what leaves the request when a conversation outgrows the window (contract §12).
//
// It must not send requests, touch the store or change a message: its
// functions are pure, over the messages a request would send, so that a
// request built after a restart is sized exactly as the same process would
// have sized it. It does not convert tool results into text (package result
// does).
package window

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// DefaultContext is the context window, in tokens, assumed for a model the
// table does not know when no override is given: small on purpose, since
// too small costs only results taken out of the request early (they stay
// readable), and too large costs a refused request.
const DefaultContext = 32768

// MinInput is the fewest tokens a request must be allowed besides the
// answer's room: a window that leaves less cannot hold a system prompt, the
// tools and a question.
const MinInput = 1024

// Limits are a model's limits, in tokens.
type Limits struct {
	// Context is the context window: the request's input and the answer
	// together.
	Context int
	// Output is the most tokens one answer may have (max_tokens); 0 when
	// unknown.
	Output int
	// Input is the most tokens one request may hold whatever the answer's
	// room, for a model whose provider caps input below Context less the
	// answer (OpenAI's GPT-5: 272,000 of a 400,000 window); 0 when the
	// window less the answer's room is the only bound.
	Input int
}

// Source says where a Window's size came from.
type Source string

// The sources of a window's size.
const (
	FromTable    Source = "table"    // the model is in the table
	FromOverride Source = "override" // --context-window N or Agent.ContextWindow
	FromDefault  Source = "default"  // unknown model, no override: DefaultContext
	FromProvider Source = "provider" // a provider's refusal stated a smaller one
)

// Window is the context window a conversation's requests must fit.
type Window struct {
	// Model is the model name the window was found for, as given.
	Model string
	Limits
	// Source says whether the size is the table's, the override's or
	// DefaultContext.
	Source Source
}

// model is a row of the table: a model's name without date or alias
// suffix, and its limits.
type model struct {
	name string
	Limits
}

// table holds the common models' limits, from the providers' model pages
// (platform.claude.com/docs/en/about-claude/models/overview and
// platform.openai.com/docs/models), as read on 2026-12-03. Windows are the
// standard ones: Anthropic's 1M-token beta for some Sonnet models needs a
// beta header myelin does not send, so it is not assumed; use the override.
var table = []model{
	// Anthropic.
	{"claude-3-haiku", Limits{200000, 4096, 0}},
	{"claude-3-opus", Limits{200000, 4096, 0}},
	{"claude-3-sonnet", Limits{200000, 4096, 0}},
	{"claude-3-5-haiku", Limits{200000, 8192, 0}},
	{"claude-3-5-sonnet", Limits{200000, 8192, 0}},
	{"claude-3-7-sonnet", Limits{200000, 64000, 0}},
	{"claude-sonnet-4", Limits{200000, 64000, 0}},
	{"claude-sonnet-4-0", Limits{200000, 64000, 0}},
	{"claude-opus-4", Limits{200000, 32000, 0}},
	{"claude-opus-4-0", Limits{200000, 32000, 0}},
	{"claude-opus-4-1", Limits{200000, 32000, 0}},
	{"claude-sonnet-4-5", Limits{200000, 64000, 0}},
	{"claude-haiku-4-5", Limits{200000, 64000, 0}},
	{"claude-opus-4-5", Limits{200000, 64000, 0}},
	// OpenAI.
	{"gpt-4o", Limits{128000, 16384, 0}},
	{"gpt-4o-mini", Limits{128000, 16384, 0}},
	{"chatgpt-4o", Limits{128000, 16384, 0}},
	{"gpt-4.1", Limits{1047576, 32768, 0}},
	{"gpt-4.1-mini", Limits{1047576, 32768, 0}},
	{"gpt-4.1-nano", Limits{1047576, 32768, 0}},
	{"o1", Limits{200000, 100000, 0}},
	{"o1-mini", Limits{128000, 65536, 0}},
	{"o1-preview", Limits{128000, 32768, 0}},
	{"o1-pro", Limits{200000, 100000, 0}},
	{"o3", Limits{200000, 100000, 0}},
	{"o3-mini", Limits{200000, 100000, 0}},
	{"o3-pro", Limits{200000, 100000, 0}},
	{"o4-mini", Limits{200000, 100000, 0}},
	{"gpt-5", Limits{400000, 128000, 272000}},
	{"gpt-5-mini", Limits{400000, 128000, 272000}},
	{"gpt-5-nano", Limits{400000, 128000, 272000}},
	{"gpt-5-codex", Limits{400000, 128000, 272000}},
	{"gpt-5-chat", Limits{128000, 16384, 0}},
	// Google (ai.google.dev/gemini-api/docs/models: input limit, output
	// limit).
	{"gemini-2.0-flash", Limits{1048576, 8192, 0}},
	{"gemini-2.0-flash-lite", Limits{1048576, 8192, 0}},
	{"gemini-2.5-pro", Limits{1048576, 65536, 0}},
	{"gemini-2.5-flash", Limits{1048576, 65536, 0}},
	{"gemini-2.5-flash-lite", Limits{1048576, 65536, 0}},
}

// platformID is how Bedrock and Vertex name a Claude model: Bedrock's
// "[region.]anthropic.NAME-v1:0", Vertex's "NAME@DATE".
var (
	// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
	bedrockSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-v\d+(:\d+)?$`) })
	vertexDate    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`@(\d{8})$`) })
)

// suffix is what may follow a table name in a model's name: a date as
// Anthropic writes it (-20250929), as OpenAI does (-2025-04-14), or an
// alias (-latest).
var suffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$`) })

// Lookup returns the limits of a model the table knows. A name matches a
// row as it is, with a dated or -latest suffix ("claude-sonnet-4-5-20250929",
// "gpt-4o-2024-08-06", "claude-3-7-sonnet-latest"), and behind a router's
// "vendor/" prefix ("openai/gpt-4o"); case does not matter. It does not
// guess: "gpt-4o-mini" is its own row, never gpt-4o's. Claude's ids on
// Bedrock ("global.anthropic.claude-sonnet-4-5-20250929-v1:0") and Vertex
// ("claude-sonnet-4-5@20250929") are read as the model they name.
func Lookup(name string) (Limits, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	if i := strings.Index(n, "anthropic."); i >= 0 { // Bedrock's id
		n = bedrockSuffix().ReplaceAllString(n[i+len("anthropic."):], "")
	}
	n = vertexDate().ReplaceAllString(n, "-$1") // Vertex's id
	for _, m := range table {
		if n == m.name || strings.HasPrefix(n, m.name) && suffix().MatchString(n[len(m.name):]) {
			return m.Limits, true
		}
	}
	return Limits{}, false
}

// For returns the window of model: override when it is above 0, else the
// table's, else DefaultContext (Source says which; the caller says so once
// on stderr, see Window.Notice). The output limit is the table's even under
// an override. A negative override is an error.
func For(model string, override int) (Window, error) {
	if override < 0 {
		return Window{}, fmt.Errorf("context window %d for model %q: it must be a positive number of tokens (0 means the model's known window)", override, model)
	}
	l, known := Lookup(model)
	switch {
	case override > 0:
		return Window{Model: model, Limits: Limits{Context: override, Output: l.Output, Input: l.Input}, Source: FromOverride}, nil
	case known:
		return Window{Model: model, Limits: l, Source: FromTable}, nil
	}
	return Window{Model: model, Limits: Limits{Context: DefaultContext}, Source: FromDefault}, nil
}

// Notice is what to tell the user once about w, or "" when there is
// nothing to say: a window assumed for a model the table does not know.
func (w Window) Notice() string {
	if w.Source != FromDefault {
		return ""
	}
	return fmt.Sprintf("myelin: the context window of model %q is not known; assuming %d tokens (set it with --context-window N)", w.Model, w.Context)
}

// Budget is how many tokens a request may hold, given that maxTokens of the
// window are kept for the answer (the request's max_tokens), and no more
// than the model's Input cap when it has one. It fails,
// saying with which numbers, when maxTokens is not positive or leaves less
// than MinInput tokens of the window.
func (w Window) Budget(maxTokens int) (int, error) {
	if maxTokens <= 0 {
		return 0, fmt.Errorf("the answer's room (max tokens) is %d for model %q: it must be positive", maxTokens, w.Model)
	}
	if w.Context-maxTokens < MinInput {
		return 0, fmt.Errorf("a context window of %d tokens for model %q leaves %d for the request after %d for the answer (max tokens); at least %d are needed: raise --context-window or lower --max-tokens",
			w.Context, w.Model, w.Context-maxTokens, maxTokens, MinInput)
	}
	if w.Input > 0 && w.Input < w.Context-maxTokens {
		return w.Input, nil // the provider's own cap on input
	}
	return w.Context - maxTokens, nil
}

// Budget is For then Window.Budget: the tokens a request to model may
// hold, with override as in For and maxTokens kept for the answer.
func Budget(model string, override, maxTokens int) (int, error) {
	w, err := For(model, override)
	if err != nil {
		return 0, err
	}
	return w.Budget(maxTokens)
}
