package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/shell"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// toolsetFlags choose the tools of run, chat, tool list and tool call.
type toolsetFlags struct {
	allowShell      bool
	noCodeExecution bool
	script          script.Limits
	scriptMemory    int // MiB
	scriptOutput    int // MiB
	mcp             mcpFlags
	// background, when set, offers background scripts (run and chat).
	background *backgroundSetup
}

func (f *toolsetFlags) add(fs *flag.FlagSet) {
	fs.BoolVar(&f.allowShell, "allow-shell", false, "offer shell--run")
	fs.BoolVar(&f.noCodeExecution, "no-code-execution", false, "do not offer code_execution (scripts that call the other tools)")
	fs.DurationVar(&f.script.Time, "script-time", script.DefaultTime, "a script's wall time limit, a `duration` like 30s")
	fs.IntVar(&f.scriptMemory, "script-memory", script.DefaultMemory>>20, "a script's memory limit in `MiB`")
	fs.IntVar(&f.scriptOutput, "script-output", script.DefaultOutput>>20, "a script's output limit in `MiB`")
	fs.IntVar(&f.script.ToolCalls, "script-tool-calls", script.DefaultToolCalls, "the most tool calls of one script")
	fs.IntVar(&f.script.Stack, "script-stack", script.DefaultStack, "a script's call depth limit, in engine stack slots")
	f.mcp.add(fs)
}

// limits are the script limits the flags give, checked.
func (f *toolsetFlags) limits() (script.Limits, error) {
	l := f.script
	l.Memory, l.Output = int64(f.scriptMemory)<<20, f.scriptOutput<<20
	for name, v := range map[string]int64{"--script-time": int64(l.Time), "--script-memory": l.Memory, "--script-output": int64(l.Output), "--script-tool-calls": int64(l.ToolCalls), "--script-stack": int64(l.Stack)} {
		if v <= 0 {
			return l, fmt.Errorf("%s must be positive", name)
		}
	}
	return l, nil
}

// toolset is the tools of one command, and what they hold open.
type toolset struct {
	reg   *tool.Registry
	mcp   *mcp.Set
	trace *workspace.Log
	toolsetBackground
}

// openToolset assembles the workspace's tools, the MCP servers' (started
// here), shell--run when allowed, and code_execution over all of them
// unless turned off. env is the conversion's environment of the command.
func openToolset(ctx context.Context, ws *workspace.Workspace, f toolsetFlags, env result.Env, stderr io.Writer) (*toolset, error) {
	if err := checkOwnFiles(ws, stderr); err != nil {
		return nil, err
	}
	set, err := startMCP(ctx, ws, f.mcp, stderr, stderr)
	if err != nil {
		return nil, err
	}
	ts := &toolset{reg: &tool.Registry{}, mcp: set}
	tools := append(ws.Tools(), set.Tools()...)
	if f.allowShell {
		tools = append(tools, shell.Tool(ws.Dir()))
	}
	if err := ts.reg.Add(tools...); err != nil {
		ts.close()
		return nil, err
	}
	if !f.noCodeExecution {
		limits, err := f.limits()
		if err != nil {
			ts.close()
			return nil, err
		}
		ts.trace = openTrace(ws)
		c := script.Config{Tools: ts.reg, Env: env, Limits: limits}
		if ts.trace != nil {
			c.Trace = ts.trace
		}
		if f.background != nil {
			if c, err = ts.withBackground(ws, f.background, c, env); err != nil {
				ts.close()
				return nil, err
			}
		}
		if err := ts.reg.Add(script.Tool(c)); err != nil {
			ts.close()
			return nil, err
		}
	}
	return ts, nil
}

func (ts *toolset) close() {
	if ts.bg != nil {
		ts.bg.Close() // before the tools its scripts call
	}
	ts.mcp.Close()
	if ts.trace != nil {
		ts.trace.Close()
	}
}
