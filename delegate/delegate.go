// Package delegate owns subagents: the tool agent--delegate, which runs a
// task as a conversation of its own — a child of the conversation whose
// call started it — and gives its final answer back as the call's result.
//
// A child has its own system prompt (DefaultSystem) with the task as its
// first message, a subset of the parent's tools, the parent's workspace,
// provider and store, and limits (Limits: its rounds and time, how deep
// subagents nest, how many run at once in the process, and the tokens
// that all the subagents one round of calls starts may use together). It is stored like any conversation,
// linked to the call that started it (history.Conversation.Parent and
// ParentCall), and claimed by its own turn: one writer per conversation,
// the parent's turn writing the parent, the child's the child. Its answer
// becomes text through package result like any result (a string as
// itself, spilled by the cap); the package converts nothing itself and
// must not write to the parent's conversation.
//
// With fork: true a child is instead a fork of the parent's conversation
// made before the answer that delegated (fork.go): it continues it with
// the parent's system prompt, tools and model, and its first request is
// the parent's last with the task after it, sharing its cached prefix.
package delegate

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// Name is the tool's name.
const Name = "agent--delegate"

// The default limits of a child (Limits' zero fields).
const (
	DefaultRounds = 20
	DefaultTokens = 1_000_000
	DefaultTime   = 10 * time.Minute
	DefaultDepth  = 1
	// DefaultRunning is how many subagents run at once in a process.
	DefaultRunning = 8
	// MaxRunning is the most Limits.Running may be.
	MaxRunning = 1000
)

// grace is how long past a child's time limit the dispatcher waits for the
// call (tool.Tool.Timeout) before giving up on it: the child stops at its
// limit, its tools are cancelled and its conversation stored, then its
// error result is made. Without it the dispatcher's own timeout (120 s by
// default) would cut every child short.
const grace = 30 * time.Second

// Limits bound the children. A zero field takes its default.
type Limits struct {
	// Rounds is the most tool rounds of the child's turn (its
	// agent.Agent.MaxRounds); reaching it fails the call.
	Rounds int
	// Tokens is the most tokens that all the children one round of tool
	// calls starts may use together — the round's own calls of
	// agent--delegate, those of its scripts (however many: one script
	// called it 300 times), and their children's, down the tree
	// (tool.Scope): each request's input (read from the cache, written
	// to it, or neither) and its answer's output, summed as they are
	// reported. It is checked after each request; when the sum passes it,
	// every child drawing on it is stopped (the requests in flight then,
	// one per running child at most, are the overshoot), its call fails,
	// and no more start under that round. A call outside any round (Run
	// called directly) has a budget of its own, which its child's tree
	// shares.
	Tokens int
	// Time is the child's wall time, from the call to its answer, the
	// wait for a place among Running included; reaching it stops the
	// child and fails the call.
	Time time.Duration
	// Depth is how deep subagents nest: 1 (the default) lets the
	// conversation a user started delegate, and no child; 2 lets
	// children delegate once more, and so on. A child at the limit is
	// not offered agent--delegate, and a call that reaches it anyway
	// (from a script) is refused.
	Depth int
	// Running is how many children of this Delegate run at once, all
	// conversations together: a program makes one Delegate, which its
	// children's registries share, so it bounds the process. A call
	// beyond it waits for a place (within its Time); a child's own call
	// (Depth 2 and more) is refused at once instead, as its parent holds
	// a place while it would wait. At most MaxRunning.
	Running int
}

// Or is l with each zero field set to its default.
func (l Limits) Or() Limits {
	if l.Rounds <= 0 {
		l.Rounds = DefaultRounds
	}
	if l.Tokens <= 0 {
		l.Tokens = DefaultTokens
	}
	if l.Time <= 0 {
		l.Time = DefaultTime
	}
	if l.Depth <= 0 {
		l.Depth = DefaultDepth
	}
	if l.Running <= 0 {
		l.Running = DefaultRunning
	}
	return l
}

// Check returns the error for limits that are negative, naming the field,
// or past their most.
func (l Limits) Check() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"rounds", int64(l.Rounds)}, {"tokens", int64(l.Tokens)}, {"time", int64(l.Time)}, {"depth", int64(l.Depth)}, {"running", int64(l.Running)}} {
		if f.v < 0 {
			return fmt.Errorf("the subagents' %s limit is %d: it must be positive (or 0 for the default)", f.name, f.v)
		}
	}
	if l.Running > MaxRunning {
		return fmt.Errorf("the subagents' running limit is %d: it must be at most %d", l.Running, MaxRunning)
	}
	return nil
}

// DefaultSystem is a child's system prompt unless Delegate.System is set.
// It holds no per-session values, so that every child's requests begin
// with the same cacheable prefix (its tools, then this).
const DefaultSystem = `You are a subagent: another agent gave you one task, which is your first message. Do it with your tools in the workspace you share with it: a directory tree, paths relative to its root.
Tool results longer than the inline cap are cut: the result then ends with a notice that names the file holding the whole result and gives the exact workspace--read call for the next page; workspace--grep searches it.
Your final answer — the text of your last message, when you call no more tools — is all the other agent receives: make it complete and self-contained (what you found, what you changed, with paths), and say plainly if you could not do the task.`

// Description is the tool's description. It holds no per-session values.
const Description = `Delegate a task to a subagent: a new conversation with the task as its first message, the same workspace, and your tools (or those named in tools). Its final answer is this call's result; nothing else it writes reaches you. Several calls in one round run at once.
Use it for work that would fill your context with what you do not need afterwards (searching, reading many files, trying things), or for independent parts of a task run side by side. Write the task so that it stands alone: the subagent sees nothing of this conversation — unless you set fork: true, which makes the subagent a continuation of this conversation as it stands before this call (it knows all you know, has your tools and model, and its requests reuse your cached prefix; tools and model are then left out). It has limits (tool rounds, time, and a token budget shared by the subagents of one round of calls, a script's included; a few run at once, the others wait); a subagent that fails or reaches one gives an error result saying what happened and naming its conversation.`

// input is the tool's arguments.
type input struct {
	Task  string   `json:"task" jsonschema:"the whole task, standing alone: the subagent sees nothing else of this conversation (unless fork is set)"`
	Tools []string `json:"tools,omitempty" jsonschema:"the names of the tools the subagent may use (a name may end in * for all that begin so: workspace--*); all of yours when left out, none when empty"`
	Model string   `json:"model,omitempty" jsonschema:"the model the subagent runs on, by the provider's name for it; yours when left out"`
	Fork  bool     `json:"fork,omitempty" jsonschema:"true: the subagent continues this conversation as it stands before this call instead of starting blank — it sees everything you have, with your tools and model, and its requests reuse your cached prefix; tools and model must then be left out"`
}

// Delegate makes and runs children. Agent must be set before the first
// call; the other fields have working zero values. It must not be changed
// while calls run.
type Delegate struct {
	// Agent is the parent's agent: a child runs on its Provider, Store,
	// Env (workspace and caps), Model, MaxTokens, ContextWindow (for its
	// model), Context policy, ToolTimeout, Lease, KeepRequests and
	// RefusalGuard. A forked child runs on the agent of the conversation
	// it forks instead (a child's, for a child's call), whose model,
	// window and tools its requests must carry.
	Agent *agent.Agent
	// Tools are the tools a child may be given; nil means Agent.Tools as
	// it is at the call. agent--delegate itself is given only to a child
	// below Limits.Depth. A forked child has the definitions of all its
	// parent's tools; those not here, or in Withhold, refuse its calls.
	Tools *tool.Registry
	// Limits bound each child.
	Limits Limits
	// Over makes the tools that must run over a child's own tools, not
	// the parent's: code_execution, whose scripts call the tools of the
	// registry it was made with (a script of a child given two tools
	// must not reach a third). Keys are the tools' names. Such a tool a
	// child is given is made for the child's registry, after its other
	// tools; a tool of the parent's that runs over the parent's tools
	// and has no entry here would let a child reach them all.
	Over map[string]func(reg *tool.Registry) (*tool.Tool, error)
	// Withhold names tools of the parent's that no child is given: those
	// that act on the parent's own state (its background scripts,
	// code_execution--list and --cancel).
	Withhold []string
	// System is a child's system prompt; "" means DefaultSystem.
	System string
	// On, when set, receives each child's events as its turn runs
	// (child is its conversation's id; the first event is agent.Started
	// once it holds its claim), from the goroutine of the call that runs
	// it: children of one round call it concurrently.
	On func(child string, e agent.Event)

	once    sync.Once
	slots   chan struct{} // the places of Limits.Running, made on first use
	waiting atomic.Int32  // calls waiting for a place
}

// Tool is agent--delegate over d. Its calls may run again after a crash
// (tool.Tool.Rerun): a call run again finds the child its first run made,
// and starts none (see Run). Its calls of one round run alongside each
// other (tool.Tool.Alongside).
func (d *Delegate) Tool() *tool.Tool {
	t := tool.MustFunc(Name, Description, func(ctx context.Context, in input) (any, error) {
		if in.Fork {
			if refused := checkFork(d.callerOf(ctx), in.Tools, in.Model); refused != "" {
				return result.Error(refused), nil
			}
			return d.RunFork(ctx, in.Task), nil
		}
		return d.Run(ctx, in.Task, in.Tools, in.Model), nil
	})
	t.Timeout = d.Limits.Or().Time + grace
	t.Rerun = true
	// Subagents of one round run at once: each is a conversation of its
	// own whose calls the parent's gate checks and whose rounds order
	// them (docs/tools.md, "Dispatch").
	t.Alongside = true
	return t
}

// depthKey carries how deep the running conversation is: 0 (absent) for
// one a user started, n for a child of a child... n deep.
type depthKey struct{}

func depthOf(ctx context.Context) int { n, _ := ctx.Value(depthKey{}).(int); return n }

// Outcome is what a child did, the structured content of its call's
// result: for scripts and the API (the model reads the text).
type Outcome struct {
	// Conversation is the child's conversation id.
	Conversation string `json:"conversation"`
	// Reason is how its turn ended: "end_turn", "round_limit",
	// "time_limit", "token_limit", "interrupted", "failed", or the
	// model's stop reason.
	Reason string `json:"reason"`
	Rounds int    `json:"rounds"`
	// Usage is the sum over its requests.
	Usage history.Usage `json:"usage"`
	// Reused is set when the answer was the child's from before a
	// restart (the call was run again by a recovery).
	Reused bool `json:"reused,omitempty"`
}

// Errors a child's context ends with when it reaches a limit.
var (
	errTime   = errors.New("time limit")
	errTokens = errors.New("token limit")
)

// Run runs one call of agent--delegate under ctx (the call's: its
// conversation, tool.ConversationOf, and its id, tool.CallID, are what
// the child is linked to) and returns its result: the child's final
// answer, or an error result saying what failed and naming the child's
// conversation.
//
// A call whose conversation already has a child for its call id is a
// call run again after a crash (agent.Recover): it starts no child. A
// child that had answered gives that answer again; one that had not is
// recovered as a conversation (its calls without results answered, as
// contract §7 says), left where it stopped, and the call's result is an
// error saying it was interrupted and how to continue it.
func (d *Delegate) Run(ctx context.Context, task string, tools []string, model string) result.Result {
	return d.run(ctx, task, tools, model, false)
}

// RunFork runs one call of agent--delegate {fork: true} under ctx as Run
// does, its child a fork of the call's conversation (tool.ConversationOf)
// made before the answer holding the call (tool.CallID), on the agent of
// that conversation with its tools and model (fork.go). A call not in that
// conversation's messages (a script's), or outside any, is an error
// result, as is a Store that keeps no forks (history.Brancher).
func (d *Delegate) RunFork(ctx context.Context, task string) result.Result {
	return d.run(ctx, task, nil, "", true)
}

// run is Run, and RunFork when fork is set.
func (d *Delegate) run(ctx context.Context, task string, tools []string, model string, fork bool) result.Result {
	ctx = history.Unclaimed(ctx) // the parent's claim is the parent's: the child takes its own
	if err := d.Limits.Check(); err != nil {
		return result.Error(fmt.Sprintf("%s: %v", Name, err))
	}
	lim := d.Limits.Or()
	if d.Agent == nil || d.Agent.Provider == nil || d.Agent.Store == nil {
		return result.Error(Name + " is not set up here: subagents run in a conversation (myelin run, chat or serve with --delegate)")
	}
	depth := depthOf(ctx)
	if depth >= lim.Depth {
		return result.Error(fmt.Sprintf("%s: subagents may nest %d deep, and this conversation is %d deep already: do this task yourself", Name, lim.Depth, depth))
	}
	task = strings.TrimSpace(task)
	if task == "" {
		return result.Error(Name + ": the task is empty: give the subagent's whole task, standing alone")
	}
	parent, call := tool.ConversationOf(ctx), tool.CallID(ctx)
	if parent == "" {
		call = "" // a link to a call needs its conversation
	}
	from := d.Agent
	var reg *tool.Registry
	var err error
	at := 0 // where a forked child parts from its parent
	if fork {
		var refused string
		if at, refused = d.forkPoint(ctx, parent, call); refused != "" {
			return result.Error(refused)
		}
		from = d.callerOf(ctx)
		reg, err = d.forkRegistry(from)
	} else {
		reg, err = d.registry(tools, depth+1 < lim.Depth)
	}
	if err != nil {
		return result.Error(fmt.Sprintf("%s: %v", Name, err))
	}
	child := d.child(from, reg, model, lim)
	if parent != "" && call != "" {
		if r, found := d.again(ctx, child, parent, call); found {
			return r
		}
	}
	b := d.budgetOf(ctx, lim)
	if b.spent() {
		return result.Error(b.refusal())
	}
	ctx, stop := context.WithTimeoutCause(ctx, lim.Time, errTime)
	defer stop()
	free, busy := d.place(ctx, depth, lim)
	if free == nil {
		return result.Error(busy)
	}
	defer free()
	if b.spent() { // while it waited
		return result.Error(b.refusal())
	}
	// what remains of the caller's budgets, read once it may start: a
	// sibling that ran while it waited has spent from them
	if refused := underCaller(child, agent.SpendingOf(ctx)); refused != "" {
		return result.Error(refused)
	}
	id := agent.NewID()
	prompt := task
	if fork {
		if refused := d.fork(ctx, id, parent, call, at); refused != "" {
			return result.Error(refused)
		}
		prompt = ForkPrompt + task
	} else if err := d.Agent.Store.Create(ctx, history.Conversation{ID: id, System: child.System, Parent: parent, ParentCall: call}); err != nil {
		return result.Error(fmt.Sprintf("%s: the subagent's conversation could not be made: %v", Name, err))
	}
	return d.turn(context.WithValue(ctx, budgetKey{d}, b), child, id, prompt, depth+1, lim, b)
}

// child is the agent a child runs on: p's (the parent's; a forked
// child's, the agent of the conversation it forks), with the child's
// tools, system prompt, model and round limit. Its calls are checked by
// the parent's gate (its Gate, else the one on the call's context). A
// forked child's conversation has its base's system prompt, which its
// requests send whatever the agent's System.
func (d *Delegate) child(p *agent.Agent, reg *tool.Registry, model string, lim Limits) *agent.Agent {
	c := &agent.Agent{Provider: p.Provider, Store: p.Store, Tools: reg, Env: p.Env, Model: p.Model,
		System: d.System, MaxTokens: p.MaxTokens, ContextWindow: p.ContextWindow, Context: p.Context,
		MaxRounds: lim.Rounds, ToolTimeout: p.ToolTimeout, KeepRequests: p.KeepRequests, Lease: p.Lease,
		RefusalGuard: p.RefusalGuard, Gate: p.Gate, RetryFor: p.RetryFor}
	if c.System == "" {
		c.System = DefaultSystem
	}
	if model = strings.TrimSpace(model); model != "" && model != p.Model {
		c.Model, c.ContextWindow = model, 0 // the window is the one known for it
	}
	return c
}

// turn runs child conversation id's one turn on task, within lim, and
// makes the call's result of how it ended.
func (d *Delegate) turn(ctx context.Context, child *agent.Agent, id, task string, depth int, lim Limits, b *budget) result.Result {
	ctx = context.WithValue(context.WithValue(ctx, depthKey{}, depth), callerKey{d}, child)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Another child passing the budget stops this one too.
	go func() {
		select {
		case <-b.over:
			cancel(errTokens)
		case <-ctx.Done():
		}
	}()
	var used atomic.Int64
	caller := agent.SpendingOf(ctx) // the calling turn's budgets, charged with each request
	on := func(e agent.Event) {
		if e.Kind == agent.Usage {
			u := e.Usage
			caller.Charge(child.Model, u)
			n := int64(u.Input + u.CacheRead + u.CacheWrite + u.Output)
			used.Add(n)
			if b.add(n) {
				cancel(errTokens) // this answer is stored; nothing more is asked for
			}
		}
		if d.On != nil {
			d.On(id, e)
		}
	}
	tr, err := child.Turn(ctx, id, task, on)
	out := Outcome{Conversation: id, Reason: tr.Reason, Rounds: tr.Rounds, Usage: tr.Usage}
	var why string
	switch cause := context.Cause(ctx); {
	case err == nil && (tr.Reason == "end_turn" || tr.Reason == "tool_end_turn"):
		text := tr.Text
		if strings.TrimSpace(text) == "" {
			text = "[the subagent finished without any text in its final answer]"
		}
		return result.Result{Data: text, Structured: out}
	case errors.Is(cause, errTime):
		out.Reason, why = "time_limit", fmt.Sprintf("it reached its time limit of %s before its final answer", lim.Time)
	case errors.Is(cause, errTokens):
		out.Reason, why = "token_limit", fmt.Sprintf("the subagents of this round of tool calls (with their scripts' and their own subagents') used %d tokens together, over their shared budget of %d (myelin's --delegate-tokens), before its final answer; its own requests used %d", b.used.Load(), b.limit, used.Load())
	case err == nil && tr.Reason == agent.BudgetReached:
		why = "it reached what remained of its calling turn's budgets, which it spends from (docs/cost.md), before its final answer"
	case err == nil && tr.Reason == "round_limit":
		why = fmt.Sprintf("it reached its limit of %d tool rounds before its final answer", lim.Rounds)
	case err == nil:
		why = fmt.Sprintf("its answer stopped with %q before it was finished", tr.Reason)
	case ctx.Err() != nil:
		out.Reason, why = "interrupted", fmt.Sprintf("it was stopped: %v", context.Cause(ctx))
	default:
		out.Reason, why = "failed", err.Error()
	}
	return failed(id, why, tr.Text, out)
}

// failed is the error result of a child that gave no final answer: what
// happened, its conversation, and the text of its last answer.
func failed(id, why, last string, out Outcome) result.Result {
	msg := fmt.Sprintf("the subagent failed: %s. Its conversation is %s (%d tool rounds); everything it did is kept there.", why, id, out.Rounds)
	if strings.TrimSpace(last) != "" {
		msg += "\nIts last text:\n" + last
	}
	return result.Result{Data: msg, IsError: true, Structured: out}
}

// registry is the child's tools: those of the parent named by names (all
// when nil), agent--delegate itself only when delegate is set.
func (d *Delegate) registry(names []string, delegate bool) (*tool.Registry, error) {
	from := d.Tools
	if from == nil {
		from = d.Agent.Tools
	}
	var offered []*tool.Tool
	if from != nil {
		offered = slices.DeleteFunc(from.Tools(), func(t *tool.Tool) bool { return t.Name == Name || slices.Contains(d.Withhold, t.Name) })
	}
	var picked []*tool.Tool
	if names == nil {
		picked = offered
	} else {
		var unknown []string
		seen := map[string]bool{}
		for _, n := range names {
			n = strings.TrimSpace(n)
			matched := false
			for _, t := range offered {
				if ok, _ := path.Match(n, t.Name); ok || n == t.Name {
					matched = true
					if !seen[t.Name] {
						seen[t.Name] = true
						picked = append(picked, t)
					}
				}
			}
			if !matched && n != Name {
				unknown = append(unknown, fmt.Sprintf("%q", n))
			}
		}
		if len(unknown) > 0 {
			have := make([]string, 0, len(offered))
			for _, t := range offered {
				have = append(have, t.Name)
			}
			return nil, fmt.Errorf("tools names %s, which match none of the tools a subagent may have: %s", strings.Join(unknown, ", "), strings.Join(have, ", "))
		}
	}
	reg := &tool.Registry{}
	var over []string
	for _, t := range picked {
		if d.Over[t.Name] != nil {
			over = append(over, t.Name)
		} else if err := reg.Add(t); err != nil {
			return nil, err
		}
	}
	if delegate {
		if err := reg.Add(d.Tool()); err != nil {
			return nil, err
		}
	}
	for _, name := range over {
		t, err := d.Over[name](reg)
		if err == nil {
			err = reg.Add(t)
		}
		if err != nil {
			return nil, fmt.Errorf("making %s over the subagent's tools: %w", name, err)
		}
	}
	return reg, nil
}

// again is the result of a call run again after a crash, when its first
// run made a child (found is false when it had not: the call runs as
// new). See Run.
func (d *Delegate) again(ctx context.Context, child *agent.Agent, parent, call string) (r result.Result, found bool) {
	kids, err := history.Children(ctx, d.Agent.Store, parent)
	if err != nil {
		return result.Error(fmt.Sprintf("%s: looking for the subagent this call may have started before a restart: %v", Name, err)), true
	}
	var mine []history.Conversation
	for _, k := range kids {
		if k.ParentCall == call {
			mine = append(mine, k)
		}
	}
	if len(mine) == 0 {
		return result.Result{}, false
	}
	// A provider that gives the same call id twice in one conversation
	// (the fakes of tests do) has a child per call: the calls of that id
	// answered already had the first ones, so this call's is the next.
	parentMsgs, err := d.Agent.Store.Messages(ctx, parent)
	if err != nil {
		return result.Error(fmt.Sprintf("%s: looking for the subagent this call may have started before a restart: %v", Name, err)), true
	}
	calls, answeredCalls := 0, 0
	for _, m := range parentMsgs {
		for _, p := range m.Parts {
			switch {
			case p.CallID != call:
			case p.Type == history.ToolCallPart:
				calls++
			case p.Type == history.ToolResultPart:
				answeredCalls++
			}
		}
	}
	if calls == 0 || answeredCalls >= len(mine) {
		// not a call of the parent's messages (a script's: its ids are its
		// own, and a recovery never runs them again), or its children all
		// belong to the calls of that id answered already
		return result.Result{}, false
	}
	c := &mine[answeredCalls]
	msgs, err := d.Agent.Store.Messages(ctx, c.ID)
	if err != nil {
		return result.Error(fmt.Sprintf("%s: reading the conversation %s of the subagent this call started before a restart: %v", Name, c.ID, err)), true
	}
	msgs = msgs[min(c.BaseAt, len(msgs)):] // a forked child's own: its first BaseAt are its parent's
	out := Outcome{Conversation: c.ID, Rounds: rounds(msgs), Usage: usage(msgs), Reused: true}
	if text, ok := answered(msgs); ok {
		out.Reason = "end_turn"
		if strings.TrimSpace(text) == "" {
			text = "[the subagent finished without any text in its final answer]"
		}
		return result.Result{Data: text, Structured: out}, true
	}
	out.Reason = "interrupted"
	why := "the process running it stopped before its final answer, and it was not continued"
	if _, err := child.Recover(ctx, c.ID); err != nil {
		why += fmt.Sprintf(" (answering the calls it left without results failed: %v)", err)
	}
	last := ""
	if n := len(msgs); n > 0 && msgs[n-1].Role == history.Assistant {
		last = msgs[n-1].Text()
	}
	return failed(c.ID, why+"; `myelin run --conversation "+c.ID+" PROMPT` goes on with it", last, out), true
}

// answered is the text of a child's final answer, when its turn ended
// with one: its last message (records aside) an answer of the model that
// calls no tools and was not cut off.
func answered(msgs []history.Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.IsRecord() {
			continue
		}
		if m.Role != history.Assistant || m.Cut || len(m.ToolCalls()) > 0 {
			return "", false
		}
		return m.Text(), true
	}
	return "", false
}

// rounds is how many tool rounds a child's conversation holds.
func rounds(msgs []history.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == history.Assistant && len(m.ToolCalls()) > 0 {
			n++
		}
	}
	return n
}

// usage sums the usage stored with a child's answers.
func usage(msgs []history.Message) history.Usage {
	var u history.Usage
	for _, m := range msgs {
		if m.Usage != nil {
			u.Add(*m.Usage)
		}
	}
	return u
}
