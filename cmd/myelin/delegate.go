package main

import (
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/delegate"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
)

// delegateFlags offer agent--delegate (subagents, docs/agent.md) on run,
// chat and serve, and bound each child.
type delegateFlags struct {
	on     bool
	limits delegate.Limits
}

func (f *delegateFlags) add(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "delegate", false, "offer agent--delegate: subagents, each a conversation of its own that does one task and answers with its result")
	fs.IntVar(&f.limits.Rounds, "delegate-rounds", delegate.DefaultRounds, "the most tool rounds of one subagent")
	fs.IntVar(&f.limits.Tokens, "delegate-tokens", delegate.DefaultTokens, "the most tokens the subagents of one round of tool calls may use together — those it starts, its scripts start, and theirs (input, cached or not, and output)")
	fs.DurationVar(&f.limits.Time, "delegate-time", delegate.DefaultTime, "the most time one subagent may take, a `duration`")
	fs.IntVar(&f.limits.Depth, "delegate-depth", delegate.DefaultDepth, "how deep subagents nest: 1, only the conversation you started delegates; 2, its subagents too...")
	fs.IntVar(&f.limits.Running, "delegate-running", delegate.DefaultRunning, fmt.Sprintf("the most subagents running at once in this process (`N`, 1 to %d); a call beyond it waits for a place within --delegate-time", delegate.MaxRunning))
}

// check refuses limits that are not positive or past their most, naming
// the flag.
func (f *delegateFlags) check() error {
	l := f.limits
	switch {
	case l.Rounds <= 0:
		return fmt.Errorf("--delegate-rounds %d: give 1 or more (default %d)", l.Rounds, delegate.DefaultRounds)
	case l.Tokens <= 0:
		return fmt.Errorf("--delegate-tokens %d: give 1 or more (default %d)", l.Tokens, delegate.DefaultTokens)
	case l.Time <= 0:
		return fmt.Errorf("--delegate-time %v: give a positive duration (default %v)", l.Time, delegate.DefaultTime)
	case l.Depth <= 0:
		return fmt.Errorf("--delegate-depth %d: give 1 or more (default %d)", l.Depth, delegate.DefaultDepth)
	case l.Running <= 0 || l.Running > delegate.MaxRunning:
		return fmt.Errorf("--delegate-running %d: give 1 to %d (default %d)", l.Running, delegate.MaxRunning, delegate.DefaultRunning)
	}
	return nil
}

// newDelegate is the Delegate of a command when --delegate is given, nil
// otherwise; its Agent is set once the agent is made (openAgent). Each
// child's start and answer are a line, naming its conversation, said
// through say (the command's mcpUI.notify: through the turn's reporter
// while a turn runs, clear of its spinner and text; on stderr otherwise).
func (f *delegateFlags) newDelegate(say func(string)) *delegate.Delegate {
	if !f.on {
		return nil
	}
	d := &delegate.Delegate{Limits: f.limits, Withhold: []string{background.ToolList, background.ToolCancel}}
	var mu sync.Mutex
	started := map[string]time.Time{}
	d.On = func(child string, e agent.Event) {
		switch e.Kind {
		case agent.Started:
			mu.Lock()
			started[child] = time.Now()
			mu.Unlock()
			say(fmt.Sprintf("subagent %s started", child))
		case agent.Stored:
			if m := e.Message; m != nil && m.Role == history.Assistant && len(m.ToolCalls()) == 0 {
				mu.Lock()
				took := time.Since(started[child])
				mu.Unlock()
				say(fmt.Sprintf("subagent %s answered after %s", child, duration(took)))
			}
		case agent.Retry:
			say(fmt.Sprintf("subagent %s: %s", child, e.Text))
		case agent.Waiting:
			if !e.Until.IsZero() { // a wait at the rate limit (a claim's is the parent's own)
				say(fmt.Sprintf("subagent %s: %s", child, e.Text))
			}
		}
	}
	return d
}

// withDelegate adds agent--delegate to tools when the command offers it,
// and has code_execution made again over each child's own tools (a
// child's script reaches only the tools the child was given), without
// background scripts.
func (ts *toolset) withDelegate(tools []*tool.Tool) []*tool.Tool {
	d := ts.flags.delegate
	if d == nil {
		return tools
	}
	if !ts.flags.noCodeExecution {
		limits, _ := ts.flags.limits() // checked by openToolset
		d.Over = map[string]func(*tool.Registry) (*tool.Tool, error){
			script.Name: func(reg *tool.Registry) (*tool.Tool, error) {
				c := script.Config{Tools: reg, Env: ts.env, Limits: limits, Engines: ts.engines}
				if ts.trace != nil {
					c.Trace = ts.trace
				}
				return script.Tool(c), nil
			},
		}
	}
	return append(tools, d.Tool())
}
