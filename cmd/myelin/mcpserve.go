package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/mcpserver"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/workspace"
)

const mcpServeUsage = `Usage:
  myelin mcp serve [--workspace DIR] [--allow-shell] [tool flags]
      Serve the workspace's tools to an MCP host over stdio: its standard
      input and output carry the protocol, its log goes to stderr.
  myelin mcp serve --http ADDR [--token TOKEN] [flags]
      The same over streamable HTTP on ADDR (host:port), with the auth rules
      of myelin serve: a token is needed off the loopback interface, and a
      request for another host or from another origin is refused.

Every result reaches the host as myelin's own model gets it (docs/mcp.md):
a big one spilled in the workspace, the host given its head and the call
that pages the rest. The permission rules (--allow, --ask, --deny, --yes)
check every call from the host.
`

// mcpServeFlags are the flags of myelin mcp serve.
type mcpServeFlags struct {
	workspace string
	inlineCap int
	http      string
	token     string
	fixtures  bool
	tools     toolsetFlags
	perm      permFlags
}

func (f *mcpServeFlags) set() *flag.FlagSet {
	fs := newFlagSet("mcp serve")
	fs.StringVar(&f.workspace, "workspace", ".", "the workspace root `DIR`")
	fs.IntVar(&f.inlineCap, "inline-cap", 0, fmt.Sprintf("the inline cap `N` in characters (default %d; at least %d)", result.DefaultCap, result.MinCap))
	fs.StringVar(&f.http, "http", "", "serve streamable HTTP on `ADDR` (host:port) instead of stdio")
	fs.StringVar(&f.token, "token", "", "with --http, the `TOKEN` every request must send as Authorization: Bearer TOKEN (default $MYELIN_TOKEN); required off the loopback interface")
	fs.BoolVar(&f.fixtures, "conformance-fixtures", false, "FOR TESTS ONLY: add the tools, resources and prompts the MCP conformance suite's server scenarios name (docs/mcp.md)")
	f.tools.add(fs)
	f.perm.add(fs)
	return fs
}

// mcpServeCommand is myelin mcp serve: args are those after "serve".
func mcpServeCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "mcp serve"
	var f mcpServeFlags
	fs := f.set()
	pos, code, done := parseCommand(name, mcpServeUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, name, fmt.Sprintf("takes no arguments, got %q", pos))
	}
	if explicit(fs)["inline-cap"] && f.inlineCap < result.MinCap {
		return usageError(stderr, name, inlineCapError(f.inlineCap))
	}
	ws, err := workspace.Open(f.workspace)
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	defer ws.Close()
	f.tools.mcp.ui = newMCPUI(nil, stderr)
	f.tools.background = &backgroundSetup{wakes: background.NewQueue()}
	env := result.Env{Store: ws, Limits: result.Limits{Agent: f.inlineCap}}
	ts, err := openToolset(ctx, ws, f.tools, env, stderr)
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	defer ts.close()
	gate, err := f.perm.gate(ws.Dir(), stderr)
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	srv := mcpserver.New(mcpserver.Config{Name: "myelin", Version: version(), Tools: ts.reg, Env: env, Gate: gate, Workspace: ws, Fixtures: f.fixtures})
	if f.http == "" {
		if err := srv.Serve(ctx, &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
			return exitError
		}
		return exitOK
	}
	return serveMCPHTTP(ctx, srv, f, stderr)
}

// nopWriteCloser is w with a Close that does nothing: the process's
// standard output outlives the MCP session.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
