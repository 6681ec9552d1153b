package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/myelin-run/myelin/delegate"
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
	sandbox         sandboxFlags // how shell--run's commands are confined
	noCodeExecution bool
	script          script.Limits
	scriptMemory    int // MiB
	scriptOutput    int // MiB
	scriptEngines   int
	mcp             mcpFlags
	// background, when set, offers background scripts (run and chat).
	background *backgroundSetup
	// delegate, when set, offers agent--delegate (--delegate: delegate.go).
	delegate *delegate.Delegate
}

func (f *toolsetFlags) add(fs *flag.FlagSet) {
	fs.BoolVar(&f.allowShell, "allow-shell", false, "offer shell--run (in run, chat and serve, each command of a call is still checked against the permission rules: --allow, --yes)")
	f.sandbox.add(fs)
	fs.BoolVar(&f.noCodeExecution, "no-code-execution", false, "do not offer code_execution (scripts that call the other tools)")
	fs.DurationVar(&f.script.Time, "script-time", script.DefaultTime, "a script's wall time limit, a `duration` like 30s")
	fs.IntVar(&f.scriptMemory, "script-memory", script.DefaultMemory>>20, "a script's memory limit in `MiB`")
	fs.IntVar(&f.scriptOutput, "script-output", script.DefaultOutput>>20, "a script's output limit in `MiB`")
	fs.IntVar(&f.script.ToolCalls, "script-tool-calls", script.DefaultToolCalls, "the most tool calls of one script")
	fs.IntVar(&f.script.Stack, "script-stack", script.DefaultStack, "a script's call depth limit, in engine stack slots")
	fs.IntVar(&f.scriptEngines, "script-engines", script.DefaultEngines, fmt.Sprintf("the most script engines alive at once in this process (`N`, 1 to %d): scripts of calls beyond it wait for one within their time limit, background scripts are refused", script.MaxEngines))
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
	if f.scriptEngines < 1 || f.scriptEngines > script.MaxEngines {
		return l, fmt.Errorf("--script-engines %d: give 1 to %d (default %d)", f.scriptEngines, script.MaxEngines, script.DefaultEngines)
	}
	return l, nil
}

// toolset is the tools of one command, and what they hold open.
type toolset struct {
	reg   *tool.Registry
	mcp   *mcp.Set
	trace *workspace.Log
	toolsetBackground
	ui *mcpUI // what the user sees of the servers' requests; may be nil
	// engines bound the script engines of the process: every script
	// config made here, the children's too, shares it. It keeps engines
	// between scripts (script.NewPooledEngines); close ends them.
	engines *script.Engines

	// What the registry is built from again when the servers' tools
	// change (refresh).
	ws         *workspace.Workspace
	flags      toolsetFlags
	env        result.Env
	mcpVersion uint64 // the Set's Version the registry holds
}

// openToolset assembles the workspace's tools, the MCP servers' (started
// here), shell--run when allowed, and code_execution over all of them
// unless turned off. env is the conversion's environment of the command.
func openToolset(ctx context.Context, ws *workspace.Workspace, f toolsetFlags, env result.Env, stderr io.Writer) (*toolset, error) {
	return openToolsetOf(ctx, ws, ws.Tools(), f, env, stderr)
}

// openToolsetOf is openToolset with the workspace's tools already made
// (ws.Tools(): run and chat make them while their store opens).
func openToolsetOf(ctx context.Context, ws *workspace.Workspace, wsTools []*tool.Tool, f toolsetFlags, env result.Env, stderr io.Writer) (*toolset, error) {
	if err := checkOwnFiles(ws, stderr); err != nil {
		return nil, err
	}
	if err := f.sandbox.check(); err != nil {
		return nil, err
	}
	if f.allowShell {
		f.sandbox.warnOff(stderr)
	}
	set, err := startMCP(ctx, ws, f.mcp, stderr, stderr)
	if err != nil {
		return nil, err
	}
	ts := &toolset{mcp: set, ui: f.mcp.ui, ws: ws, flags: f, env: env, engines: script.NewPooledEngines(f.scriptEngines, script.Pool{})}
	if !f.noCodeExecution {
		if _, err := f.limits(); err != nil {
			ts.close()
			return nil, err
		}
		ts.trace = openTrace(ws)
	}
	ts.mcpVersion = set.Version()
	if ts.reg, err = ts.build(wsTools, set.Tools()); err != nil {
		ts.close()
		return nil, err
	}
	return ts, nil
}

// build is a registry of the workspace's tools wsTools, the servers'
// mcpTools, shell--run when allowed, and code_execution over all of them.
func (ts *toolset) build(wsTools, mcpTools []*tool.Tool) (*tool.Registry, error) {
	reg := &tool.Registry{}
	tools := append(wsTools[:len(wsTools):len(wsTools)], mcpTools...)
	if ts.flags.allowShell {
		tools = append(tools, shell.ToolWithPolicy(ts.ws.Dir(), ts.flags.sandbox.policy()))
	}
	tools = ts.withDelegate(tools)
	if err := reg.Add(tools...); err != nil {
		return nil, err
	}
	if !ts.flags.noCodeExecution {
		limits, _ := ts.flags.limits() // checked by openToolset
		c := script.Config{Tools: reg, Env: ts.env, Limits: limits, Engines: ts.engines}
		if ts.trace != nil {
			c.Trace = ts.trace
		}
		if ts.flags.background != nil {
			var err error
			if c, err = ts.withBackground(reg, ts.flags.background, c); err != nil {
				return nil, err
			}
		}
		if err := reg.Add(script.Tool(c)); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// refresh rebuilds the registry when a server's tools changed since it
// was built (tools/list_changed), and reports whether it did. It is
// called between turns, never within one, so that a turn's requests keep
// one tool list. A rebuild that fails keeps the old registry and says why.
func (ts *toolset) refresh() (bool, error) {
	v := ts.mcp.Version()
	if v == ts.mcpVersion {
		return false, nil
	}
	reg, err := ts.build(ts.ws.Tools(), ts.mcp.Tools())
	if err != nil {
		return false, fmt.Errorf("an MCP server's tools changed, and the new set cannot be offered (the old one is): %w", err)
	}
	ts.reg, ts.mcpVersion = reg, v
	return true, nil
}

func (ts *toolset) close() {
	if ts.bg != nil {
		ts.bg.Close() // before the tools its scripts call
	}
	ts.engines.Close()
	ts.mcp.Close()
	if ts.trace != nil {
		ts.trace.Close()
	}
}
