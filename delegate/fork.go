package delegate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// A forked child (agent--delegate {fork: true}, issue 30) does not start
// blank: it is a fork of the conversation that makes the call
// (history.Brancher), made before the answer holding the call, and its
// first message is ForkPrompt and the task. Its first request is then the
// request that answer came from, with the task after it, so the
// provider's prompt cache holds everything before the task
// (docs/branches.md, "Subagents that inherit", says why this point and
// not after the call). For that its requests must be sent as its
// parent's are: on the parent's model, with the parent's system prompt
// (the fork's record has it) and tool definitions, byte for byte.

// ForkPrompt begins the first message of a forked child, the task after
// it. It holds no per-session values.
const ForkPrompt = `[agent--delegate, fork: true] You are now a subagent, forked from this conversation at the point where it delegated the task below to you: everything above is yours to use, and you share its workspace. Do the task with your tools, and only the task. Your final answer — the text of your last message, when you call no more tools — is all the conversation that delegated receives, as its call's result: make it complete and self-contained (what you found, what you changed, with paths), and say plainly if you could not do it.

The task:
`

// callerKey carries, on a child's context, the agent its turn runs on:
// the agent of the conversation that makes the calls under it, which a
// forked grandchild's requests must be sent as.
type callerKey struct{ d *Delegate }

// callerOf is the agent of the conversation whose call runs under ctx:
// a child's, else the parent's (Agent).
func (d *Delegate) callerOf(ctx context.Context) *agent.Agent {
	if a, ok := ctx.Value(callerKey{d}).(*agent.Agent); ok {
		return a
	}
	return d.Agent
}

// checkFork is the refusal of fork: true with tools or another model than
// from's, "" when there is none: a forked child's requests must begin as
// its parent's do, whose tools they carry and whose model's cache they
// read.
func checkFork(from *agent.Agent, tools []string, model string) string {
	switch {
	case tools != nil:
		return Name + ": fork: true gives the subagent your tools, as its requests must begin as yours do to share your cached prefix: leave tools out, or leave fork out to choose its tools"
	case strings.TrimSpace(model) != "" && strings.TrimSpace(model) != from.Model:
		return fmt.Sprintf("%s: fork: true runs the subagent on your model (%s), as a provider's cache is its model's: leave model out, or leave fork out to choose its model", Name, from.Model)
	}
	return ""
}

// forkPoint is where a child forked for call parts from conversation
// parent: the number of messages before the answer that holds call,
// which is the last of parent's messages (records aside) while its
// calls run — their results are stored after them, and a round's kept
// results (Store.Keep) are no messages. Those messages never change, so
// reading them needs no claim. A call not in that answer (a script's,
// whose ids are its own), or outside any conversation, has no point, and
// a Store that keeps no forks none either: the error result's text says
// so. It is found before the call waits for anything.
func (d *Delegate) forkPoint(ctx context.Context, parent, call string) (int, string) {
	if parent == "" {
		return 0, Name + ": fork: true forks the conversation that makes the call, and there is no conversation to fork here (the call runs outside one): leave fork out"
	}
	if _, ok := d.Agent.Store.(history.Brancher); !ok {
		return 0, fmt.Sprintf("%s: fork: true: %v: call agent--delegate without fork, with a task that stands alone", Name, agent.ErrNoForks)
	}
	msgs, err := d.Agent.Store.Messages(ctx, parent)
	if err != nil {
		return 0, fmt.Sprintf("%s: fork: true: reading the conversation %s to fork: %v", Name, parent, err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.IsRecord() {
			continue
		}
		if m.Role == history.Assistant && call != "" {
			for _, p := range m.Parts {
				if p.Type == history.ToolCallPart && p.CallID == call {
					return i, ""
				}
			}
		}
		break
	}
	return 0, Name + ": fork: true forks this conversation where its call of agent--delegate is, and this call is not one of this conversation's messages (a script's call is not): call agent--delegate with fork yourself, or leave fork out and give a task that stands alone"
}

// fork makes the conversation of a forked child: id, a fork of parent at
// at (forkPoint, whose check the store passed), linked to call. It
// returns the error result's text when it cannot.
func (d *Delegate) fork(ctx context.Context, id, parent, call string, at int) string {
	b, _ := d.Agent.Store.(history.Brancher)
	if _, err := b.Fork(ctx, history.Conversation{ID: id, Base: parent, BaseAt: at, Parent: parent, ParentCall: call}); err != nil {
		return fmt.Sprintf("%s: the subagent's conversation could not be forked from %s at message %d: %v", Name, parent, at, err)
	}
	return ""
}

// forkRegistry is a forked child's tools: from's, each with the
// definition from's requests send (its name, description and input
// schema), so that the child's requests carry the same. What runs is
// what a child may run: a tool of Withhold, or not among the tools a
// child may be given (Tools), keeps its definition and refuses every
// call; agent--delegate runs as d's (refused past the depth limit); a
// tool of Over is made over the child's own registry.
func (d *Delegate) forkRegistry(from *agent.Agent) (*tool.Registry, error) {
	allowed := from.Tools
	if from == d.Agent && d.Tools != nil {
		allowed = d.Tools
	}
	reg := &tool.Registry{}
	if from.Tools == nil {
		return reg, nil
	}
	var over []*tool.Tool
	for _, t := range from.Tools.Tools() {
		add := t
		switch run := allowed.Get(t.Name); {
		case t.Name == Name:
			add = as(t, d.Tool())
		case d.Over[t.Name] != nil:
			over = append(over, t)
			continue
		case slices.Contains(d.Withhold, t.Name):
			add = standIn(t, fmt.Sprintf("%s is not given to subagents: it acts on what belongs to the conversation that delegated (a forked subagent sees its definition only because its requests begin as that conversation's do); do without it", t.Name))
		case run == nil:
			add = standIn(t, fmt.Sprintf("%s is not given to subagents here (a forked subagent sees its definition only because its requests begin as the delegating conversation's do); do without it", t.Name))
		case run != t:
			add = as(t, run)
		}
		if err := reg.Add(add); err != nil {
			return nil, err
		}
	}
	for _, t := range over {
		made, err := d.Over[t.Name](reg)
		if err == nil {
			err = reg.Add(as(t, made))
		}
		if err != nil {
			return nil, fmt.Errorf("making %s over the subagent's tools: %w", t.Name, err)
		}
	}
	return reg, nil
}

// as is a tool defined as def is — what a request sends of it: its
// name, description and input schema — that runs as run does.
func as(def, run *tool.Tool) *tool.Tool {
	return &tool.Tool{Name: def.Name, Description: def.Description, InputSchema: def.InputSchema, Handler: run.Handler,
		Timeout: run.Timeout, Rerun: run.Rerun, ReadOnly: run.ReadOnly, Destructive: run.Destructive, Alongside: run.Alongside}
}

// standIn is a tool defined as def is whose every call is refused with
// why; it does nothing, so it may run again and reads nothing.
func standIn(def *tool.Tool, why string) *tool.Tool {
	return &tool.Tool{Name: def.Name, Description: def.Description, InputSchema: def.InputSchema, ReadOnly: true, Rerun: true,
		Handler: func(context.Context, json.RawMessage) result.Result { return result.Error(why) }}
}
