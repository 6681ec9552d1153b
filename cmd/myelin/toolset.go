package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"

	"myelin/mcp"
	"myelin/result"
	"myelin/script"
	"myelin/shell"
	"myelin/tool"
	"myelin/workspace"
)

// toolsetFlags choose the tools of run, chat, tool list and tool call.
type toolsetFlags struct {
	allowShell      bool
	noCodeExecution bool
	mcp             mcpFlags
}

func (f *toolsetFlags) add(fs *flag.FlagSet) {
	fs.BoolVar(&f.allowShell, "allow-shell", false, "offer shell--run")
	fs.BoolVar(&f.noCodeExecution, "no-code-execution", false, "do not offer code_execution (scripts that call the other tools)")
	f.mcp.add(fs)
}

// toolset is the tools of one command, and what they hold open.
type toolset struct {
	reg   *tool.Registry
	mcp   *mcp.Set
	trace *os.File
}

// openToolset assembles the workspace's tools, the MCP servers' (started
// here), shell--run when allowed, and code_execution over all of them
// unless turned off. env is the conversion's environment of the command.
func openToolset(ctx context.Context, ws *workspace.Workspace, f toolsetFlags, env result.Env, stderr io.Writer) (*toolset, error) {
	set, err := startMCP(ctx, ws, f.mcp, stderr)
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
		ts.trace = openTrace(ws)
		c := script.Config{Tools: ts.reg, Env: env}
		if ts.trace != nil {
			c.Trace = ts.trace
		}
		if err := ts.reg.Add(script.Tool(c)); err != nil {
			ts.close()
			return nil, err
		}
	}
	return ts, nil
}

// openTrace opens .myelin/logs/trace.log for appending, where the tool
// calls of scripts are recorded; nil when it cannot be opened (the calls
// are still in each result's structured content).
func openTrace(ws *workspace.Workspace) *os.File {
	dir := filepath.Join(ws.Dir(), ".myelin", "logs")
	if os.MkdirAll(dir, 0o755) != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, "trace.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil
	}
	return f
}

func (ts *toolset) close() {
	ts.mcp.Close()
	if ts.trace != nil {
		ts.trace.Close()
	}
}
