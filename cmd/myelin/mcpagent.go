package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// mcpAgentName is the name of the agent tool of mcp serve --agent.
const mcpAgentName = "agent--run"

// mcpAgentDescription is the agent tool's description, as hosts show it
// to their models.
const mcpAgentDescription = `Run a task with a myelin agent: a model of its own that works with this server's tools (it reads and searches the workspace, and whatever else they allow) until it has the answer, and answers with it.
The task must stand alone: the agent sees only it, and, when you continue a conversation, what was said in it before. Each call is stored as a turn of a conversation: leave conversation out to start a new one, or give the conversation an earlier call returned to go on with it (it remembers that conversation). The result is the agent's final answer; its structured content also names the conversation, how the turn ended and the tokens it used.`

// agentInput is the agent tool's input.
type agentInput struct {
	Task         string `json:"task" jsonschema:"the whole task, standing alone: the agent sees nothing else but, when continuing, its conversation so far"`
	Conversation string `json:"conversation,omitempty" jsonschema:"the conversation to continue: the conversation an earlier call returned; left out, a new one is started (an id that is not stored yet starts one under that id)"`
}

// agentOutcome is what a call of the agent tool did: its structured
// content, whose schema is the tool's output schema.
type agentOutcome struct {
	Conversation string        `json:"conversation" jsonschema:"the conversation the turn is stored in: give it as conversation to continue it; empty when nothing was stored"`
	Answer       string        `json:"answer" jsonschema:"the agent's final answer; on a turn that did not end with one, its last text; its first characters only when answer_cut is set"`
	AnswerCut    bool          `json:"answer_cut,omitempty" jsonschema:"the answer is longer than the inline cap and answer holds its first characters: the whole answer is the result's text (spilled when long: its notice names the file) and the conversation's last message"`
	Reason       string        `json:"reason" jsonschema:"how the turn ended: end_turn or tool_end_turn (answered), round_limit, budget, refused_twice, time_limit, interrupted, failed, or the model's stop reason (max_tokens...)"`
	Rounds       int           `json:"rounds" jsonschema:"the tool rounds of the turn"`
	Usage        history.Usage `json:"usage" jsonschema:"the tokens of the turn's requests"`
}

// agentOutputSchema is the agent tool's output schema: agentOutcome's,
// made by reflection at its first use (mcp serve --agent), not at the init
// every myelin command ran (issue 34).
var agentOutputSchema = sync.OnceValue(func() *jsonschema.Schema {
	s, err := jsonschema.For[agentOutcome](nil)
	if err != nil {
		panic(fmt.Sprintf("the agent tool's output schema: %v", err))
	}
	return s
})

// mcpAgent is the agent tool of mcp serve --agent: each call a turn of
// the agent on the task it gives. It must not offer itself to the agent:
// the agent's tools are the toolset's alone.
type mcpAgent struct {
	tool *tool.Tool

	mu sync.Mutex
	a  *agent.Agent // the agent calls run on: offering the toolset's newest tools (setTools)

	// stopping ends the running calls' turns when mcp serve stops; calls
	// counts them, for stop to wait for their answers to be stored;
	// stopped (under mu) refuses the calls that come after.
	stopping context.Context
	end      context.CancelFunc
	calls    sync.WaitGroup
	stopped  bool
}

// newMCPAgent is the agent tool over a, each call bounded by timeout.
func newMCPAgent(a *agent.Agent, timeout time.Duration) *mcpAgent {
	m := &mcpAgent{a: a}
	m.stopping, m.end = context.WithCancel(context.Background())
	m.tool = tool.MustFunc(mcpAgentName, mcpAgentDescription, m.call)
	m.tool.OutputSchema = agentOutputSchema()
	m.tool.Timeout = timeout
	// A call takes no turn among the host's calls: its turn orders its
	// own calls, as a subagent's does (tool.Tool.Alongside), and a host
	// must not wait minutes on it to read or write a file.
	m.tool.Alongside = true
	return m
}

// setTools has the calls that start from now on offer reg: a clone of the
// agent, so that the turns running keep the tools they began with.
func (m *mcpAgent) setTools(reg *tool.Registry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.a.Tools != reg {
		c := m.a.Clone()
		c.Tools = reg
		m.a = c
	}
}

// current is the agent a call starting now runs on.
func (m *mcpAgent) current() *agent.Agent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.a
}

// model says which model the agent runs on, for the log.
func (m *mcpAgent) model() string { return m.current().Model }

// stop cancels the running calls' turns and waits for them to end: each
// stores its answer as far as it came, as run does when interrupted.
func (m *mcpAgent) stop() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.end()
	m.calls.Wait()
}

// enter counts a call in, unless mcp serve is stopping.
func (m *mcpAgent) enter() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return false
	}
	m.calls.Add(1)
	return true
}

// call runs one call of the agent tool: a turn of the conversation in.
// Conversation names (a new one when it names none) on in.Task, its
// progress reported to whoever watches the call (tool.ReportProgress).
// The call's end (the host's cancel, the tool's timeout, mcp serve
// stopping) ends the turn, which stores what came of it.
func (m *mcpAgent) call(ctx context.Context, in agentInput) (any, error) {
	if !m.enter() {
		return result.Error(mcpAgentName + ": myelin mcp serve is stopping: the turn was not started"), nil
	}
	defer m.calls.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.stopping, cancel)()
	task := strings.TrimSpace(in.Task)
	if task == "" {
		return result.Error(mcpAgentName + ": the task is empty: give the agent's whole task, standing alone"), nil
	}
	a := m.current()
	id := strings.TrimSpace(in.Conversation)
	if id == "" {
		var err error
		if id, err = a.NewConversation(ctx); err != nil {
			return result.Error(fmt.Sprintf("%s: a new conversation could not be made: %v", mcpAgentName, err)), nil
		}
	} else if err := a.OpenConversation(ctx, id); err != nil {
		return result.Error(fmt.Sprintf("%s: conversation %s could not be opened: %v", mcpAgentName, id, err)), nil
	}
	p := &agentProgress{ctx: ctx}
	tr, err := a.Turn(tool.WithProgress(ctx, p.inner), id, task, p.event)
	return outcome(ctx, a, id, tr, err), nil
}

// outcome is the result of a call whose turn of conversation id ended
// with tr and err (ctx is the call's).
func outcome(ctx context.Context, a *agent.Agent, id string, tr agent.TurnResult, err error) result.Result {
	out := agentOutcome{Conversation: id, Answer: tr.Text, Reason: tr.Reason, Rounds: tr.Rounds, Usage: tr.Usage}
	// The text is capped (a long answer spilled); the structured content
	// is not, and goes to the host only within the round bound with the
	// text: a long answer gives it its head.
	if limit := a.Env.Limits.InlineCap(); utf8.RuneCountInString(out.Answer) > limit {
		out.Answer, out.AnswerCut = string([]rune(out.Answer)[:limit]), true
	}
	var why string
	switch {
	case err == nil && (tr.Reason == "end_turn" || tr.Reason == "tool_end_turn"):
		text := tr.Text
		if strings.TrimSpace(text) == "" {
			text = "[the agent finished without any text in its final answer]"
		}
		return result.Result{Data: text + continueNote(id), Structured: out}
	case tr.Dropped:
		out.Conversation, out.Reason = "", "failed"
		return result.Result{IsError: true, Structured: out,
			Data: fmt.Sprintf("the agent's turn failed: %v; nothing was stored: the provider was never reached", err)}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		out.Reason, why = "time_limit", "it reached the agent tool's time limit (--agent-time) before its final answer"
	case ctx.Err() != nil:
		out.Reason, why = "interrupted", "it was cancelled before its final answer"
	case err == nil && tr.Reason == "round_limit":
		why = fmt.Sprintf("it reached its limit of %d tool rounds (--max-rounds) before its final answer", a.MaxRounds)
	case err == nil && tr.Reason == agent.BudgetReached:
		why = "it reached a budget (--max-turn-tokens, --max-cost or --max-conversation-cost) before its final answer"
	case err == nil:
		why = fmt.Sprintf("its answer stopped with %q before it was finished", tr.Reason)
	default:
		out.Reason, why = "failed", err.Error()
		if held := (*history.HeldError)(nil); errors.As(err, &held) {
			why += "; try again once the other writer has finished, or start a new conversation"
		}
	}
	msg := fmt.Sprintf("the agent's turn did not end with an answer: %s. Its conversation is %s (%d tool rounds); the answer as far as it came is stored there.", why, id, tr.Rounds)
	if strings.TrimSpace(tr.Text) != "" {
		msg += "\nIts last text:\n" + tr.Text
	}
	return result.Result{Data: msg + continueNote(id), IsError: true, Structured: out}
}

// continueNote ends the text of a call's result: the conversation to
// give to go on, for hosts whose models read the text alone, not the
// structured content.
func continueNote(id string) string {
	return fmt.Sprintf("\n\n[myelin conversation %s: give it as conversation to continue it]", id)
}

// agentProgress reports a call's turn as it goes to whoever watches the
// call: a message per step, its count rising with each.
type agentProgress struct {
	ctx context.Context // the call's

	mu    sync.Mutex
	done  float64
	round int
}

// say reports one step.
func (p *agentProgress) say(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock() // reports in order, each counted above the last
	p.done++
	tool.ReportProgress(p.ctx, tool.Progress{Done: p.done, Message: msg})
}

// event reports what the turn did: started, a round's calls and their
// results, an answer, a retry, a wait, a notice.
func (p *agentProgress) event(e agent.Event) {
	switch e.Kind {
	case agent.Started:
		p.say("the turn started")
	case agent.Stored:
		m := e.Message
		if m == nil || m.Role != history.Assistant {
			return
		}
		calls := m.ToolCalls()
		if len(calls) == 0 {
			p.say("answered")
			return
		}
		names := make([]string, len(calls))
		for i, c := range calls {
			names[i] = c.Name
		}
		p.mu.Lock()
		p.round++
		r := p.round
		p.mu.Unlock()
		p.say(fmt.Sprintf("round %d: calling %s", r, strings.Join(names, ", ")))
	case agent.ToolResult:
		what := "done"
		if e.Output.IsError {
			what = "failed"
		}
		p.say(fmt.Sprintf("round %d: %s %s in %s", p.rounds(), e.Call.Name, what, duration(e.Elapsed)))
	case agent.Retry, agent.Notice, agent.Waiting, agent.ContextEdit:
		p.say(e.Text)
	}
}

// inner reports the progress of a call of the agent's as a step of the
// turn's: the agent's tools report to the agent tool's caller, within
// its count.
func (p *agentProgress) inner(pr tool.Progress) {
	msg := pr.Message
	if pr.Total > 0 {
		msg = fmt.Sprintf("%g/%g %s", pr.Done, pr.Total, msg)
	}
	p.say(fmt.Sprintf("round %d: %s", p.rounds(), strings.TrimSpace(msg)))
}

func (p *agentProgress) rounds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.round
}
