package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/myelin-run/myelin/mcp"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

const mcpUsage = `Usage:
  myelin mcp list [--workspace DIR] [--mcp-config FILE]...
      Start the MCP servers of WORKSPACE/.mcp.json and of each --mcp-config,
      and show each server, its state and the names its tools are offered
      under. Exit status 1 when a server did not start.
`

// mcpFlags are the MCP flags that tool, run and chat share with mcp list.
type mcpFlags struct {
	configs  configList
	maxReply int
}

func (f *mcpFlags) add(fs *flag.FlagSet) {
	fs.Var(&f.configs, "mcp-config", "read MCP servers from `FILE` too (an mcpServers document; may be repeated; its entries replace .mcp.json's of the same name)")
	fs.IntVar(&f.maxReply, "mcp-max-reply", mcp.DefaultMaxReply>>20, "the largest reply read from an MCP server, in `MiB`")
}

// configList is a repeatable --mcp-config.
type configList []string

func (c *configList) String() string     { return strings.Join(*c, ",") }
func (c *configList) Set(v string) error { *c = append(*c, v); return nil }

// startMCP starts the servers of the workspace's .mcp.json and of the
// --mcp-config files, and reports once on stderr each one that did not
// start. The Set is empty, not nil, when no server is configured.
func startMCP(ctx context.Context, ws *workspace.Workspace, f mcpFlags, stderr io.Writer) (*mcp.Set, error) {
	if f.maxReply <= 0 {
		return nil, fmt.Errorf("--mcp-max-reply must be at least 1 (MiB), got %d", f.maxReply)
	}
	files := []mcp.ConfigFile{{Path: filepath.Join(ws.Dir(), ".mcp.json"), Optional: true}}
	for _, p := range f.configs {
		files = append(files, mcp.ConfigFile{Path: p})
	}
	servers, err := mcp.LoadConfig(files, nil)
	if err != nil {
		return nil, err
	}
	set := mcp.Start(ctx, servers, mcp.Options{Dir: ws.Dir(), MaxReply: int64(f.maxReply) << 20, Version: version()})
	for _, err := range set.Failures() {
		fmt.Fprintln(stderr, "myelin:", err)
	}
	return set, nil
}

func mcpCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var workspaceDir string
	var f mcpFlags
	fs := newFlagSet("mcp")
	fs.StringVar(&workspaceDir, "workspace", ".", "the workspace root `DIR`")
	f.add(fs)
	if len(args) == 0 {
		return usageError(stderr, "mcp", "want a command: list")
	}
	switch args[0] {
	case "list":
	case "help", "-h", "-help", "--help":
		printHelp(stdout, mcpUsage, fs)
		return exitOK
	default:
		return usageError(stderr, "mcp", fmt.Sprintf("unknown command %q: want list", args[0]))
	}
	pos, code, done := parseCommand("mcp list", mcpUsage, fs, args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, "mcp list", fmt.Sprintf("takes no arguments, got %q", pos))
	}
	ws, err := workspace.Open(workspaceDir)
	if err != nil {
		return usageError(stderr, "mcp list", err.Error())
	}
	defer ws.Close()
	if err := checkOwnFiles(ws, stderr); err != nil {
		fmt.Fprintf(stderr, "myelin mcp list: %v\n", err)
		return exitError
	}
	set, err := startMCP(ctx, ws, f, io.Discard) // the list says it all
	if err != nil {
		return usageError(stderr, "mcp list", err.Error())
	}
	defer set.Close()
	byName := map[string]*tool.Tool{}
	for _, t := range set.Tools() {
		byName[t.Name] = t
	}
	code = exitOK
	status := set.Status()
	if len(status) == 0 {
		fmt.Fprintf(stdout, "no MCP servers: none in %s and no --mcp-config\n", filepath.Join(ws.Dir(), ".mcp.json"))
	}
	for _, st := range status {
		state := st.State
		if st.Err != "" {
			state += ": " + st.Err
			code = exitError
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\t%d tools\n", st.Name, st.Type, state, len(st.Tools))
		for _, name := range st.Tools {
			fmt.Fprintf(stdout, "  %s\t%s\n", name, byName[name].Summary())
		}
	}
	return code
}
