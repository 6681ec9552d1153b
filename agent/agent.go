// Package agent owns the loop: a turn builds the request from the stored
// conversation, streams the model's answer, runs the round of tool calls it
// asks for through package tool, stores the results — committed before they
// are sent — and goes on until the model ends its turn, a tool ends it, or
// the round limit is reached.
//
// It must not convert results itself (package result does, inside the
// dispatcher) nor build wire requests (provider/... do): every request is
// built from what the Store holds, so that a restart changes nothing in what
// is sent (contract §7).
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
)

// Defaults of an Agent's zero fields.
const (
	DefaultMaxRounds = 50
	DefaultMaxTokens = 8192
)

// DefaultSystem is the system prompt of a conversation started without one.
// It holds no per-session values, so that it stays cacheable.
const DefaultSystem = `You are an agent working in a workspace: a directory tree that your tools read and write.
Paths are relative to the workspace root. Tool results longer than the inline cap are cut: the result then ends with a notice that names the file holding the whole result and gives the exact workspace--read call for the next page; workspace--grep searches it.
Use tools when they help; answer plainly when you are done.`

// Agent runs turns of conversations. Provider, Store and Tools must be set;
// the other fields have working zero values.
type Agent struct {
	Provider provider.Provider
	Store    history.Store
	Tools    *tool.Registry
	// Env is what results need: the workspace (where spill files go) and
	// the caps.
	Env result.Env
	// Model names the model in requests.
	Model string
	// System is the system prompt of new conversations; "" means
	// DefaultSystem. A continued conversation keeps the one it began with.
	System string
	// MaxTokens bounds each answer; 0 means DefaultMaxTokens.
	MaxTokens int
	// ContextWindow is the model's context window in tokens; 0 means the
	// one package window knows for Model, or window.DefaultContext (see
	// Window).
	ContextWindow int
	// Context is how conversations are kept within the window: when
	// results are taken out of requests and how many rounds keep theirs
	// (contract §12, docs/agent.md). The zero value is the default policy.
	Context window.Policy
	// MaxRounds bounds the tool rounds of one turn; 0 means
	// DefaultMaxRounds.
	MaxRounds int
	// MaxTurnTokens bounds the tokens one turn uses — the input, cached
	// or not, and the output of its requests, summaries included; 0 means
	// no bound. Before each request the turn's tokens so far with the
	// estimate of the request's input must stay within it, or the request
	// is not sent; an answer that reaches it is stored and its calls are
	// answered unrun. Either way the turn ends with Reason BudgetReached,
	// and the conversation can be continued with a larger budget
	// (docs/agent.md, "Budgets").
	MaxTurnTokens int
	// MaxCost and MaxConversationCost bound, in US dollars, what one turn
	// and the whole conversation (this turn included) cost, priced by
	// Pricer, checked as MaxTurnTokens is; 0 means no bound. With either
	// set, a turn whose model has no price (or, with MaxConversationCost,
	// a conversation with answers from a model that has none) does not
	// start: its error says so.
	MaxCost, MaxConversationCost float64
	// Pricer prices usage for the cost budgets; it must be set when one
	// is. *price.Table is one.
	Pricer Pricer
	// ToolTimeout bounds each tool call; 0 means tool.DefaultTimeout.
	ToolTimeout time.Duration
	// Wait makes a turn on a conversation another writer is advancing
	// wait until it can claim it (a Waiting event says for whom), instead
	// of failing with a *history.HeldError that names the holder.
	Wait bool
	// KeepRequests keeps each request's body as it was sent, with what
	// came back, in the store when it keeps requests (history.Requests):
	// what the HTTP API serves (contract §13). It costs a store write per
	// request, so it is off unless asked for; `myelin serve` asks.
	KeepRequests bool
	// Lease is how long a turn's claim on its conversation lasts without
	// a heartbeat (renewed every third of it while the turn runs); 0
	// means history.DefaultLease.
	Lease time.Duration
	// RefusalGuard, when set, meets an answer to a round's results that
	// ends with the provider's refusal (provider.Response.Refused) by
	// withholding those results — each replaced in the requests by a
	// placeholder naming the workspace file that keeps it whole, a stored
	// decision — and sending the request once more; a second refusal
	// ends the turn (RefusedTwice). The results stay in the history as
	// they were. Off by default: a refusal is then stored and ends the
	// turn as any answer does (docs/agent.md, "The refusal guard").
	RefusalGuard bool
	// DropUnreached deletes a new conversation whose first request never
	// reached the provider (provider.NeverReached: the name did not
	// resolve, the connection or the TLS handshake failed, on every
	// attempt), instead of storing the prompt and a cut answer: nothing
	// of it is kept (TurnResult.Dropped). It applies to a Turn on a
	// conversation with no messages and no parent, when the Store can
	// delete (history.Deleter); any other turn stores what it did as
	// always. `myelin run` and `chat` set it: they made the conversation
	// for the turn. A server leaves it off: its client made the
	// conversation and holds its id.
	DropUnreached bool
	// Gate checks every tool call of a turn before it runs (SPEC §14),
	// and the calls those calls make in turn (a script's, a subagent's:
	// it is put on the context of the turn's rounds, tool.WithGate); the
	// decision is stored with each call's result (history.Part.Permission).
	// nil checks nothing: every call runs, unless the context the turn
	// runs under carries a gate of its own (a subagent's turn, under its
	// parent's call) — an embedder's choice (docs/embedding.md). myelin's
	// commands set an approval.Gate.
	Gate tool.Gate
	// RetryFor, when above 0, is how long a request that failed before
	// anything of its answer was shown — overloaded, a server's fault,
	// a stream cut or an error event before its first output — is sent
	// again for, with jittered exponential backoff, counted from its
	// first attempt (docs/ratelimits.md, "Retries"); the wires' own
	// retries before any answer are bounded by the same time (their
	// Config.RetryFor). 0: such a request is not sent again by the
	// agent.
	RetryFor time.Duration

	stated atomic.Int64 // the window a provider's refusal stated (Window)
	pacing pacing       // how resends tell and wait time: a test's, else real (retry.go)
	cache  cache        // tool definitions and conversation records (cache.go)
	packs  packsRef     // the marks' packs, unpacked; shared with clones (packcache.go)
}

// EventKind says what an Event reports.
type EventKind string

// The kinds of event, in the order a turn produces them.
const (
	Started    EventKind = "started"     // the turn holds the conversation's claim; it stores the prompt next
	Stored     EventKind = "stored"      // Message: a message or record is stored (the prompt, an answer, results, a context edit)
	TextDelta  EventKind = "text"        // Text: assistant text as it streams
	ToolCall   EventKind = "tool_call"   // Call: a call about to run
	ToolResult EventKind = "tool_result" // Call, Output, Elapsed: a call's result, as stored
	Usage      EventKind = "usage"       // Usage: one request's usage
	Notice     EventKind = "notice"      // Text: something the user should know (the round limit, a recovery)
	Waiting    EventKind = "waiting"     // Text, Until: the turn waits for another writer's claim (Agent.Wait), or its request for its key's rate limit (Until set)
	Thinking   EventKind = "thinking"    // Text: the model's reasoning as it streams, on wires that stream it
	Retry      EventKind = "retry"       // Text: a request is sent again after an attempt got no answer or an error status, or (Agent.RetryFor) failed before anything of its answer was shown (RetryText)
	// Text, Edit: results were taken out of the requests, or the older
	// part of the conversation summarised, to keep it within the window;
	// or a round's results were withheld after a refusal (Edit.Refusal
	// set: Agent.RefusalGuard).
	ContextEdit EventKind = "context"
)

// Event is something that happened during a turn.
type Event struct {
	Kind    EventKind
	Text    string
	Call    history.Part
	Output  result.Output
	Elapsed time.Duration
	Usage   history.Usage
	// Edit is a ContextEdit's stored decision.
	Edit *history.Edit
	// Message is a Stored event's message, as the turn gave it to the
	// store (the store sets its time).
	Message *history.Message
	// Until is, on a Waiting event for a rate limit, when the wait is
	// expected to end (it is told again when that moves later); zero on
	// a wait for a claim, whose end no one knows.
	Until time.Time
	// Permission is, on a ToolResult event, what the gate decided of the
	// call (as stored with its result); nil when no gate checked it.
	Permission *permission.Record
}

// TurnResult is how a turn ended.
type TurnResult struct {
	// Reason is "end_turn" (the model ended it), "tool_end_turn" (a tool
	// did), "round_limit", BudgetReached (a budget did), RefusedTwice (the refusal guard did) or the
	// model's stop reason ("max_tokens", "refusal", ...).
	Reason string
	Rounds int
	// Usage is the sum over the turn's requests.
	Usage history.Usage
	// Text is the assistant's text of the turn's last answer.
	Text string
	// Dropped says the conversation was deleted, nothing of it kept: it
	// was new and its first request never reached the provider
	// (Agent.DropUnreached). The turn's error says why.
	Dropped bool
}

// NewConversation starts a conversation with the agent's system prompt and
// returns its id.
func (a *Agent) NewConversation(ctx context.Context) (string, error) {
	id := NewID()
	conv := history.Conversation{ID: id, System: a.system()}
	if err := a.Store.Create(ctx, conv); err != nil {
		return "", err
	}
	a.keepRecord(conv)
	return id, nil
}

// OpenConversation makes sure conversation id exists: a stored one is
// continued as it is (with the system prompt it began with), an unknown id
// starts a new conversation with the agent's system prompt.
func (a *Agent) OpenConversation(ctx context.Context, id string) error {
	_, err := a.record(ctx, id)
	if errors.Is(err, history.ErrNotFound) {
		err = a.Store.Create(ctx, history.Conversation{ID: id, System: a.system()})
		if errors.Is(err, history.ErrExists) {
			return nil // another process created it meanwhile: continued as it is
		}
	}
	return err
}

// NewID returns a new conversation id: sortable by time, unique.
func NewID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

func (a *Agent) system() string {
	if a.System != "" {
		return a.System
	}
	return DefaultSystem
}

// ToolDefs are the tool definitions sent with every request, in the
// registry's stable order. They are encoded once per change of the
// registry (tool.Registry.Version) and kept; the slice returned is the
// caller's.
func (a *Agent) ToolDefs() ([]provider.Tool, error) {
	defs, _, err := a.toolDefs()
	if err != nil {
		return nil, err
	}
	if len(defs) == 0 {
		return nil, nil
	}
	return slices.Clone(defs), nil
}

// Request builds the next request of a conversation from what the store
// holds, as a turn sends it when it needs no new edit: the stored messages
// with the stored edits applied (window.View), read from the store's mark
// as a turn reads them. It decides nothing and stores nothing.
func (a *Agent) Request(ctx context.Context, id string) (provider.Request, error) {
	s, err := a.sizing(ctx, id)
	if err != nil {
		return provider.Request{}, err
	}
	st, g, err := a.load(ctx, id, false)
	if err != nil {
		return provider.Request{}, err
	}
	if g == nil {
		g = window.GatherTail(st.tail)
	}
	return a.request(s, g), nil
}

// AnswerRoom is the max_tokens a request sends for an agent whose MaxTokens
// is maxTokens: it, or DefaultMaxTokens when it is 0 or less.
func AnswerRoom(maxTokens int) int {
	if maxTokens <= 0 {
		return DefaultMaxTokens
	}
	return maxTokens
}

// Window is the context window the agent's requests must fit: ContextWindow
// when set, else the one package window knows for Model, else
// window.DefaultContext (its Notice says so). It fails for a negative
// ContextWindow, naming it.
//
// Once a provider's refusal has stated a smaller window for the model
// (provider.TooLongError.Limit), that one is used for the rest of the
// process (Source window.FromProvider).
func (a *Agent) Window() (window.Window, error) {
	w, err := a.known()
	if stated := int(a.stated.Load()); err == nil && stated > 0 && stated < w.Context {
		w.Context, w.Source = stated, window.FromProvider
	}
	return w, err
}

// learnWindow takes the window a provider's refusal stated, when it is
// smaller than the one the agent sizes against, and says so.
func (a *Agent) learnWindow(limit int) string {
	w, err := a.Window()
	if err != nil || limit <= 0 || limit >= w.Context {
		return ""
	}
	a.stated.Store(int64(limit))
	return fmt.Sprintf("the provider says the context window of %s is %d tokens, less than the %d myelin sized requests for; it sizes them for %d from now on (set --context-window %d to start with it)", a.Model, limit, w.Context, limit, limit)
}

// Interrupted is the text of the result given to a tool call that has none
// because the process stopped while it ran.
const Interrupted = "this tool call was interrupted: the process running it stopped before it finished, so it may or may not have run (in part or whole); it was not run again"
