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
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
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

	stated atomic.Int64 // the window a provider's refusal stated (Window)
	cache  cache        // tool definitions and conversation records (cache.go)
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
	Waiting    EventKind = "waiting"     // Text: the turn waits for another writer's claim (Agent.Wait)
	Thinking   EventKind = "thinking"    // Text: the model's reasoning as it streams, on wires that stream it
	Retry      EventKind = "retry"       // Text: a request is sent again after an attempt got no answer or an error status (RetryText)
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
	// Permission is, on a ToolResult event, what the gate decided of the
	// call (as stored with its result); nil when no gate checked it.
	Permission *permission.Record
}

// TurnResult is how a turn ended.
type TurnResult struct {
	// Reason is "end_turn" (the model ended it), "tool_end_turn" (a tool
	// did), "round_limit", RefusedTwice (the refusal guard did) or the
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
// with the stored edits applied (window.View). It decides nothing and
// stores nothing.
func (a *Agent) Request(ctx context.Context, id string) (provider.Request, error) {
	s, err := a.sizing(ctx, id)
	if err != nil {
		return provider.Request{}, err
	}
	msgs, err := a.Store.Messages(ctx, id)
	if err != nil {
		return provider.Request{}, err
	}
	return a.request(s, window.Gather(msgs)), nil
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

// ErrHandedOver, as the cause of a turn's context
// (context.WithCancelCause), stops the turn without ending it, so that
// another process continues it (Continue): an answer cut mid-stream is not
// stored — the next holder sends that request again — while the results
// of a tool round stopped midway are stored, as on any cancel, and the
// claim is released. A queued turn is handed back so when the process
// running it stops (server.Server.Shutdown). It must not be used for a
// turn no one will continue: the conversation would wait for an answer.
var ErrHandedOver = errors.New("the turn was handed over, to be continued by another process")

// Turn runs one turn of conversation id: the prompt as a user message, then
// requests and tool rounds until the turn ends. on receives events as they
// happen; it may be nil. When ctx is cancelled the stream and the tools
// stop, and what was stored stays a valid conversation.
//
// The turn holds the conversation's claim from start to end (one writer at
// a time, contract §7): another writer's live claim fails the turn with a
// *history.HeldError naming it, or is waited for when a.Wait is set. A
// turn whose claim is taken over stops, with an error wrapping
// history.ErrClaimLost, having written nothing since.
func (a *Agent) Turn(ctx context.Context, id, prompt string, on func(Event)) (TurnResult, error) {
	return a.claimed(ctx, id, &prompt, on)
}

// turn is Turn under the conversation's claim; with a nil prompt it is
// Continue's: the prompt is stored already, and a turn that ended is left.
func (a *Agent) turn(ctx context.Context, id string, prompt *string, on func(Event)) (TurnResult, error) {
	rec, err := a.recover(ctx, id)
	if err != nil {
		return TurnResult{}, err
	}
	if rec.Finished+rec.Rerun+rec.Interrupted > 0 {
		on(Event{Kind: Notice, Text: rec.String()})
	}
	stored, err := a.Store.Messages(ctx, id)
	if err != nil {
		return TurnResult{}, err
	}
	maxRounds := a.MaxRounds
	if maxRounds <= 0 {
		maxRounds = DefaultMaxRounds
	}
	var tr TurnResult
	if prompt == nil {
		var ended bool
		if tr, ended = continuing(stored, maxRounds); ended {
			return tr, nil
		}
	}
	sz, err := a.sizing(ctx, id)
	if err != nil {
		return TurnResult{}, err
	}
	// stored with the turn's first answer, when they changed
	settings := a.checkSettings(sz, stored, on)
	withSettings := func(m history.Message) history.Message {
		m.Settings, settings = settings, nil
		return m
	}
	if prompt != nil {
		if err := a.store(ctx, id, on, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: result.WellFormed(*prompt)}}}); err != nil {
			return TurnResult{}, err
		}
	}
	// droppable: the conversation is new and is deleted, not stored, if
	// its first request never reaches the provider; reached: a request
	// of the turn did (or may have)
	droppable, reached := a.droppable(prompt, stored, sz.conv), false
	// each retry of a request is told as it is about to be made
	pctx := provider.WithRetryNotice(ctx, a.retryNotice(on))
	keeping := a.sending(id)
	sz.sent = keeping
	// what is committed even when ctx is cancelled (contract §7), and
	// what is committed without waiting for the disk: made once a turn
	kept := context.WithoutCancel(ctx)
	lazy := history.Lazy(kept)
	rs := &rounds{kept: kept, workers: &tool.Workers{}, keeper: newKeeper(a.Store, lazy, id, 0)}
	defer rs.workers.Close()
	for {
		req, place, done, err := a.fit(ctx, id, sz, on, 0, &tr)
		if err != nil {
			return tr, err
		}
		keeping.arm(&req, place)
		var streamed strings.Builder
		onText := func(s string) {
			streamed.WriteString(s)
			on(Event{Kind: TextDelta, Text: s})
		}
		req.OnThinking = func(s string) { on(Event{Kind: Thinking, Text: s}) }
		resp, err := a.Provider.Complete(pctx, req, onText)
		reached = reached || !provider.NeverReached(err)
		if refused, limit, ok := tooLong(err); ok && streamed.Len() == 0 {
			// The estimate was off, the window is smaller than myelin
			// was told, or the conversation is from before myelin kept it
			// within the window: make room, try once more.
			on(Event{Kind: Notice, Text: "the provider refused the request as longer than the context window; making room and trying once more"})
			if note := a.learnWindow(limit); note != "" {
				on(Event{Kind: Notice, Text: note})
			}
			refusal := err
			keeping.keep(ctx, false, nil, refusal)
			var more []string
			req, place, more, err = a.fit(ctx, id, sz, on, max(refused, 1), &tr)
			done = append(done, more...)
			if err != nil {
				err = errors.Join(refusal, err)
			} else {
				keeping.arm(&req, place)
				req.OnThinking = func(s string) { on(Event{Kind: Thinking, Text: s}) }
				resp, err = a.Provider.Complete(pctx, req, onText)
				if _, _, again := tooLong(err); again {
					err = fmt.Errorf("the provider refused the request as too long twice; before trying again myelin had: %s: %w", orNothing(done), err)
				}
			}
		}
		failed := func(err error) (TurnResult, error) {
			if errors.Is(context.Cause(ctx), ErrHandedOver) {
				// not ended: whoever continues it sends this request again
				keeping.keep(ctx, true, nil, err)
				return tr, err
			}
			if droppable && !reached && streamed.Len() == 0 {
				// nothing reached the provider: claimed deletes the
				// conversation once its claim is released
				return tr, &unreachedError{err: err}
			}
			// What the user saw is what is stored (contract §7).
			if serr := a.store(kept, id, on, withSettings(CutAnswer(streamed.String()))); serr != nil {
				return tr, errors.Join(err, serr)
			}
			keeping.keep(ctx, true, nil, err)
			return tr, err
		}
		// A request the provider blocked for what it holds, before any
		// output, is to the guard an answer that refused. (err is checked
		// first: errors.As allocates its target.)
		var blocked error
		if err != nil && a.RefusalGuard && streamed.Len() == 0 {
			if b, ok := provider.IsBlocked(err); ok {
				blocked, err = err, nil
				resp = provider.Response{Message: history.Message{Role: history.Assistant}, StopReason: b.Reason, Refused: true}
			}
		}
		if err != nil {
			return failed(err)
		}
		if resp.Message.Usage != nil {
			tr.Usage.Add(*resp.Message.Usage)
			on(Event{Kind: Usage, Usage: *resp.Message.Usage})
		}
		tr.Text = textOf(resp.Message)
		if a.RefusalGuard && resp.Refused {
			step, err := a.guard(kept, id, resp, streamed.String(), on)
			if err != nil {
				return tr, err
			}
			switch {
			case step == notGuarded && blocked != nil:
				return failed(blocked) // no results to withhold: the error it is
			case step == withheld:
				keeping.keep(ctx, false, resp.Message.Usage, fmt.Errorf("the model refused (stop reason %q); the refusal guard withheld the round's results and sent the request again", resp.StopReason))
				continue
			case step == refusedTwice:
				// Stored as the answer (the user saw it), its calls not run.
				if err := a.store(kept, id, on, withSettings(refusedAnswer(resp.Message))); err != nil {
					return tr, err
				}
				keeping.keep(ctx, true, resp.Message.Usage, nil)
				on(Event{Kind: Notice, Text: fmt.Sprintf("the model refused again (stop reason %q) with the round's results withheld, so the turn ends; the results stay withheld in later requests, each kept whole in the history and in the workspace file its placeholder names", resp.StopReason)})
				tr.Reason = RefusedTwice
				return tr, nil
			}
		}
		calls := callsIn(resp.Message)
		store := kept
		if calls > 0 {
			// the results' commit, before anything is sent, syncs this too
			store = lazy
		}
		if err := a.store(store, id, on, withSettings(resp.Message)); err != nil {
			return tr, err
		}
		keeping.keep(ctx, true, resp.Message.Usage, nil)
		if calls == 0 {
			tr.Reason = resp.StopReason
			if tr.Reason == "" || tr.Reason == "stop" {
				tr.Reason = "end_turn"
			}
			return tr, nil
		}
		if tr.Rounds == maxRounds {
			// The calls are answered, so the conversation stays valid, but
			// not run: the limit is reached.
			msg := fmt.Sprintf("the turn reached its limit of %d tool rounds, so these calls were not run; the user can continue the conversation to go on", maxRounds)
			answer := history.Message{Role: history.User, Parts: make([]history.Part, 0, calls)}
			for _, c := range resp.Message.Parts {
				if c.Type == history.ToolCallPart {
					answer.Parts = append(answer.Parts, history.Part{Type: history.ToolResultPart, CallID: c.CallID, Text: msg, IsError: true})
				}
			}
			if err := a.store(kept, id, on, answer); err != nil {
				return tr, err
			}
			on(Event{Kind: Notice, Text: fmt.Sprintf("stopped after %d tool rounds (the round limit); continue the conversation to go on", maxRounds)})
			tr.Reason = "round_limit"
			return tr, nil
		}
		tr.Rounds++
		endTurn, err := a.round(ctx, rs, id, resp.Message, calls, on)
		if err != nil {
			return tr, err
		}
		if ctx.Err() != nil {
			return tr, ctx.Err()
		}
		if endTurn {
			tr.Reason = "tool_end_turn"
			return tr, nil
		}
	}
}

// store appends m to conversation id and, once it is stored, says so.
func (a *Agent) store(ctx context.Context, id string, on func(Event), m history.Message) error {
	if err := a.Store.Append(ctx, id, m); err != nil {
		return err
	}
	on(Event{Kind: Stored, Message: &m})
	return nil
}

// callsIn is how many tool calls m makes.
func callsIn(m history.Message) int {
	n := 0
	for _, p := range m.Parts {
		if p.Type == history.ToolCallPart {
			n++
		}
	}
	return n
}

// rounds is what the rounds of a turn share, made once a turn: the
// turn's context without its cancellation (kept), what its calls run on
// (workers) and what keeps each result as it finishes (keeper).
type rounds struct {
	kept    context.Context
	workers *tool.Workers
	keeper  *keeper
}

// round runs one round of calls — the n tool calls of the answer m — and
// stores their results before anything is sent: each kept as it finishes,
// all of them together under rs.kept.
func (a *Agent) round(ctx context.Context, rs *rounds, id string, m history.Message, n int, on func(Event)) (bool, error) {
	tcalls := make([]tool.Call, 0, n)
	for _, c := range m.Parts {
		if c.Type != history.ToolCallPart {
			continue
		}
		input := c.Input
		if input == nil && c.Text != "" {
			input = json.RawMessage(c.Text) // not JSON: the dispatcher says so, naming the problem
		}
		tcalls = append(tcalls, tool.Call{ID: c.CallID, Name: c.Name, Input: input})
		on(Event{Kind: ToolCall, Call: c})
	}
	// each call's time, set once by the dispatcher (Finished) before the
	// round returns
	elapsed := make([]time.Duration, n)
	k := rs.keeper
	k.start(n)
	tctx, env := a.files(ctx, id) // a shared store keeps the files they save (files.go)
	tctx = tool.WithGate(tctx, a.Gate)
	// each call's permission record, set by the gate before any call
	// starts (Ruled); none without a gate
	var recs []*permission.Record
	d := &tool.Dispatcher{Tools: a.Tools, Env: env, Timeout: a.ToolTimeout, Workers: rs.workers,
		Finished:  func(i int, _ tool.Call, e time.Duration) { elapsed[i] = e },
		Converted: func(i int, c tool.Call, o result.Output) { k.keep(withRecord(resultPart(c.ID, o), recs, i)) }}
	if tool.GateOf(tctx) != nil {
		recs = make([]*permission.Record, n)
		d.Ruled = func(i int, _ tool.Call, rec permission.Record) { recs[i] = &rec }
	}
	outs := d.Round(tctx, tcalls)
	answer := history.Message{Role: history.User, Parts: make([]history.Part, len(outs))}
	endTurn := false
	for i, o := range outs {
		answer.Parts[i] = withRecord(resultPart(tcalls[i].ID, o), recs, i)
		endTurn = endTurn || o.EndTurn
	}
	// Committed even when ctx is cancelled: the results are what happened.
	if err := a.store(rs.kept, id, on, answer); err != nil {
		return false, err
	}
	i := 0
	for _, c := range m.Parts {
		if c.Type == history.ToolCallPart {
			on(Event{Kind: ToolResult, Call: c, Output: outs[i], Elapsed: elapsed[i], Permission: answer.Parts[i].Permission})
			i++
		}
	}
	return endTurn, nil
}

// keeper keeps each finished call's result at once, without a disk sync
// (contract §7: durable as soon as the call finishes; a crash of the process
// keeps it); the round's one synced append replaces them. Results that
// finish while a keep is being committed go together in the next one, so
// that calls finishing at once cost one commit, not one each (a commit is
// ~0.2 ms of CPU). The last call of a round to finish is not kept: the
// round's own commit, which follows at once, stores it (so a round of one
// call costs no keep at all). For the same reason results still queued when
// the last call finishes are not kept either: the round's commit follows
// as soon as the keep in flight returns, and stores them all (a round of
// calls finishing at once costs one keep, not two). Before each commit the
// committing goroutine yields (runtime.Gosched, a few times for each call
// still running), so that calls finishing at the same moment but not yet
// scheduled — on a busy machine, where a round's calls run one after
// another on one thread, all of them — join that commit instead of each
// paying its own. A yield delays a keep by the other runnable goroutines'
// turns, never by a timer (with nothing else to run it returns at once),
// and when it lets the round's last call finish, nothing is kept at all.
// The goroutine that commits drains the queue before its call's Converted
// returns, so when the round returns nothing is pending. A keep that fails
// costs only that durability: the round's append, which would fail the
// same way, says why.
type keeper struct {
	store   history.Store
	ctx     context.Context
	id      string
	mu      sync.Mutex
	running int // calls of the round not finished yet
	pending []history.Part
	spare   []history.Part // the other buffer: pending and the batch being committed take turns
	busy    bool
}

// newKeeper is the keeper of a round of n calls of conversation id, which
// keeps under ctx. A turn's rounds share one (start).
func newKeeper(store history.Store, ctx context.Context, id string, n int) *keeper {
	return &keeper{store: store, ctx: ctx, id: id, running: n}
}

// start readies k for a round of n calls. The round before has returned,
// so nothing of it is pending or being committed: its buffers are reused.
func (k *keeper) start(n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running = n
	k.pending = k.pending[:0]
}

func (k *keeper) keep(p history.Part) {
	k.mu.Lock()
	if k.running--; k.running == 0 {
		k.mu.Unlock() // the last: the round's commit stores it now
		return
	}
	if k.pending == nil {
		// made on the first keep, for every call that may still be
		// kept: the round's keeps append into it and spare in turn
		k.pending = make([]history.Part, 0, k.running+1)
	}
	k.pending = append(k.pending, p)
	if k.busy {
		k.mu.Unlock()
		return
	}
	k.busy = true
	for len(k.pending) > 0 {
		// calls finishing now join this commit
		for range min(yieldsPerCall*k.running, maxYields) {
			k.mu.Unlock()
			runtime.Gosched()
			k.mu.Lock()
		}
		if k.running == 0 {
			k.pending = k.pending[:0] // every call has finished: the round's commit stores these
			break
		}
		batch := k.pending
		k.pending = k.spare[:0]
		k.mu.Unlock()
		_ = k.store.Keep(k.ctx, k.id, batch...)
		k.mu.Lock()
		k.spare = batch[:0] // the store keeps no slice it is given
	}
	k.busy = false
	k.mu.Unlock()
}

// yieldsPerCall and maxYields are how many times a keep yields before its
// commit for each call of the round still running, and at most
// (keeper.keep): a call takes a few scheduling steps to finish (its
// handler's goroutine, its conversion).
const yieldsPerCall, maxYields = 4, 64

// withRecord is p with the permission record of call i, when recs has
// one.
func withRecord(p history.Part, recs []*permission.Record, i int) history.Part {
	if i < len(recs) {
		p.Permission = recs[i]
	}
	return p
}

// resultPart is the stored part of a call's output.
func resultPart(callID string, o result.Output) history.Part {
	return history.Part{Type: history.ToolResultPart, CallID: callID,
		Text: o.Text, IsError: o.IsError, Images: o.Images, SpillPath: o.SpillPath}
}

// The markers that end a cut answer's stored text (CutAnswer): the model
// reads them in every later request, so it knows its answer did not reach
// its end and that the user saw only what precedes.
const (
	CutMarker     = "[cut off here: this answer stopped before it was finished (the user stopped it, or the connection or the request failed); the user saw only the text above]"
	NoTextMarker  = "[no answer: the request was stopped or failed before any text of it arrived; the user saw nothing of it]"
	cutSeparation = "\n\n"
)

// CutAnswer is the assistant message stored for an answer cut off
// mid-stream: the text that had streamed (what the user saw), then a
// text part holding CutMarker (or NoTextMarker alone when nothing had
// streamed), with Cut set. Tool calls that had streamed, in whole or in
// part, are not in it: they were not run. It keeps the conversation valid
// on both wires — an assistant message of text between two user messages.
func CutAnswer(streamed string) history.Message {
	m := history.Message{Role: history.Assistant, Cut: true}
	if streamed == "" {
		m.Parts = []history.Part{{Type: history.TextPart, Text: NoTextMarker}}
		return m
	}
	m.Parts = []history.Part{
		{Type: history.TextPart, Text: result.WellFormed(streamed)},
		{Type: history.TextPart, Text: cutSeparation + CutMarker},
	}
	return m
}

// orNothing joins what was done, or says nothing was.
func orNothing(done []string) string {
	if len(done) == 0 {
		return "found nothing more to take out"
	}
	return strings.Join(done, "; ")
}

func textOf(m history.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == history.TextPart {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
