package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
      under. Exit status 1 when a server did not start. On a terminal, an
      unapproved .mcp.json is shown and you are asked before it starts.
  myelin mcp trust [--workspace DIR]
      Show the servers WORKSPACE/.mcp.json starts and approve its present
      contents: run, chat, tool and mcp list start them from then on, until
      the file changes.
  myelin mcp login SERVER [--workspace DIR] [--mcp-config FILE]...
      Sign in to the HTTP server SERVER: print the URL to open, open it in
      $BROWSER (or the system's browser when there is a display), and take
      the redirect on 127.0.0.1. Its tokens are kept, refreshed when they
      expire, in ~/.myelin/mcp-tokens (mode 0600), for run, chat, tool and
      mcp list. A server whose entry names client credentials is checked.
  myelin mcp serve [--workspace DIR] [--allow-shell] [--agent] [--http ADDR] [flags]
      Serve the workspace's tools to an MCP host (myelin mcp serve --help).
`

// mcpFlags are the MCP flags that tool, run and chat share with mcp list.
type mcpFlags struct {
	configs  configList
	maxReply int
	// trust is how an unapproved workspace .mcp.json is handled; the zero
	// value skips its servers with a message (no one to ask).
	trust mcpTrust
	// login has a server that asks for a sign-in get one in a browser
	// (login.go), as when trust.ask says a person is there.
	login bool
	// ui shows the user what servers ask during calls; nil: nothing is
	// shown, elicitations are declined and no server samples.
	ui *mcpUI
}

// mcpTrust says whether a person can be asked to approve the workspace's
// .mcp.json: ask is set in run, chat and mcp list when stdin and stderr
// (where the question goes) are both a terminal.
type mcpTrust struct {
	ask bool
	in  io.Reader // the answer is read here, a byte at a time
	out io.Writer // the servers and the question go here
}

func (f *mcpFlags) add(fs *flag.FlagSet) {
	fs.Var(&f.configs, "mcp-config", "read MCP servers from `FILE` too (an mcpServers document; may be repeated; its entries replace .mcp.json's of the same name)")
	fs.IntVar(&f.maxReply, "mcp-max-reply", mcp.DefaultMaxReply>>20, "the largest reply read from an MCP server, in `MiB`")
	fs.BoolVar(&f.login, "mcp-login", false, "sign in to an MCP server that asks for it: print the URL, open $BROWSER, wait for the redirect (the default on a terminal)")
}

// configList is a repeatable --mcp-config.
type configList []string

func (c *configList) String() string     { return strings.Join(*c, ",") }
func (c *configList) Set(v string) error { *c = append(*c, v); return nil }

// startMCP starts the servers of the workspace's .mcp.json, when its
// contents are approved (workspaceConfig), and of the --mcp-config files,
// and reports once on failures each one that did not start. Messages about
// approval go to stderr. A server that asks for a sign-in gets one in a
// browser with --mcp-login or when a person is there (trust.ask), and
// fails naming `myelin mcp login` otherwise. The Set is empty, not nil,
// when no server is configured.
func startMCP(ctx context.Context, ws *workspace.Workspace, f mcpFlags, stderr, failures io.Writer) (*mcp.Set, error) {
	servers, err := mcpServers(ws, f, stderr)
	if err != nil {
		return nil, err
	}
	opts := mcp.Options{Dir: ws.Dir(), MaxReply: int64(f.maxReply) << 20, Version: version(), Auth: mcpAuth(stderr)}
	if !f.login && !f.trust.ask {
		opts.Auth.Login = nil
	}
	f.ui.options(&opts)
	set := mcp.Start(ctx, servers, opts)
	for _, err := range set.Failures() {
		fmt.Fprintln(failures, "myelin:", err)
	}
	return set, nil
}

// mcpServers reads the servers of the workspace's .mcp.json, when its
// contents are approved (workspaceConfig), and of the --mcp-config files.
func mcpServers(ws *workspace.Workspace, f mcpFlags, stderr io.Writer) ([]mcp.Server, error) {
	if f.maxReply <= 0 {
		return nil, fmt.Errorf("--mcp-max-reply must be at least 1 (MiB), got %d", f.maxReply)
	}
	var files []mcp.ConfigFile
	own, err := workspaceConfig(ws.Dir(), f.trust, stderr)
	if err != nil {
		return nil, err
	}
	if own != nil {
		files = append(files, *own)
	}
	for _, p := range f.configs {
		files = append(files, mcp.ConfigFile{Path: p})
	}
	return mcp.LoadConfig(files, nil)
}

// workspaceConfig reads dir/.mcp.json and decides whether its servers may
// start: the file is returned, with the contents read once (those are the
// ones started), when it names no server or the user approved exactly
// these contents, or approves them now when asked. Otherwise it is nil and
// a message on stderr names the file, its servers and `myelin mcp trust`.
// A file that is not a valid mcpServers document is an error, as it
// always was.
func workspaceConfig(dir string, trust mcpTrust, stderr io.Writer) (*mcp.ConfigFile, error) {
	path := filepath.Join(dir, ".mcp.json")
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("MCP config %s: %w", path, err)
	}
	servers, err := mcp.ParseConfig(path, data, nil)
	if err != nil {
		return nil, err
	}
	file := &mcp.ConfigFile{Path: path, Data: data}
	if len(servers) == 0 {
		return file, nil
	}
	store, err := mcp.DefaultTrustStore()
	approved := false
	if err == nil {
		approved, err = store.Approved(path, data)
	}
	if approved {
		return file, nil
	}
	if err != nil {
		fmt.Fprintln(stderr, "myelin:", err)
	}
	if trust.ask && err == nil {
		showServers(trust.out, path, servers)
		fmt.Fprint(trust.out, "Start them, and remember this approval until the file changes? [y/N] ")
		if yes(trust.in) {
			if err := store.Approve(path, data); err != nil {
				fmt.Fprintf(trust.out, "myelin: %v; the servers start this time only\n", err)
			}
			return file, nil
		}
		fmt.Fprintf(stderr, "myelin: not approved: the MCP servers of %s are not started\n", path)
		return nil, nil
	}
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	fmt.Fprintf(stderr, "myelin: the MCP servers of %s (%s) are not started: the file's contents have not been approved; review and approve them with `myelin mcp trust --workspace %s`\n",
		path, strings.Join(names, ", "), filepath.Dir(path))
	return nil, nil
}

// showServers lists what starting the servers of path runs.
func showServers(w io.Writer, path string, servers []mcp.Server) {
	fmt.Fprintf(w, "%s starts these MCP servers, as you:\n", path)
	for _, s := range servers {
		fmt.Fprintf(w, "  %s\n", mcp.Describe(s))
	}
}

// yes reads one line of answer from r, a byte at a time (so that what
// follows stays for chat), and reports whether it is y or yes.
func yes(r io.Reader) bool {
	line, _ := readLine(r) // a line the input's end cut short still counts
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}

// mcpTrustCommand is `myelin mcp trust`: it shows the servers of the
// workspace's .mcp.json and approves the file's present contents.
func mcpTrustCommand(workspaceDir string, stdout, stderr io.Writer) int {
	path, err := filepath.Abs(filepath.Join(workspaceDir, ".mcp.json"))
	if err != nil {
		return usageError(stderr, "mcp trust", err.Error())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return usageError(stderr, "mcp trust", fmt.Sprintf("no MCP config to approve: %v", err))
	}
	servers, err := mcp.ParseConfig(path, data, nil)
	if err != nil {
		return usageError(stderr, "mcp trust", err.Error())
	}
	store, err := mcp.DefaultTrustStore()
	if err == nil {
		err = store.Approve(path, data)
	}
	if err != nil {
		fmt.Fprintln(stderr, "myelin:", err)
		return exitError
	}
	showServers(stdout, path, servers)
	fmt.Fprintf(stdout, "approved (%s), in %s: these servers start until the file changes\n", mcp.Digest(data), store.Path)
	return exitOK
}

func mcpCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var workspaceDir string
	var f mcpFlags
	fs := newFlagSet("mcp")
	fs.StringVar(&workspaceDir, "workspace", ".", "the workspace root `DIR`")
	f.add(fs)
	if len(args) == 0 {
		return usageError(stderr, "mcp", "want a command: list, login, trust or serve")
	}
	switch args[0] {
	case "list", "trust":
	case "login":
		return mcpLoginCommand(ctx, args[1:], stdin, stdout, stderr)
	case "serve":
		return mcpServeCommand(ctx, args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		printHelp(stdout, mcpUsage, fs)
		return exitOK
	default:
		return usageError(stderr, "mcp", fmt.Sprintf("unknown command %q: want list, login, trust or serve", args[0]))
	}
	name := "mcp " + args[0]
	pos, code, done := parseCommand(name, mcpUsage, fs, args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, name, fmt.Sprintf("takes no arguments, got %q", pos))
	}
	if args[0] == "trust" && len(f.configs) > 0 {
		return usageError(stderr, name, "--mcp-config files need no approval; trust approves the workspace's .mcp.json")
	}
	ws, err := workspace.Open(workspaceDir)
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	defer ws.Close()
	if args[0] == "trust" {
		// The workspace's own Dir, so that the approval's key is the path
		// run, chat and tool read the file by.
		return mcpTrustCommand(ws.Dir(), stdout, stderr)
	}
	if err := checkOwnFiles(ws, stderr); err != nil {
		fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
		return exitError
	}
	f.trust = mcpTrust{ask: isTerminal(stdin) && isTerminal(stderr), in: stdin, out: stderr}
	f.ui = newMCPUI(stdin, stderr)
	set, err := startMCP(ctx, ws, f, stderr, io.Discard) // the list says how each failed
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
		fmt.Fprintln(stdout, noServers(filepath.Join(ws.Dir(), ".mcp.json")))
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

// noServers is what mcp list says when it has no server: whether the
// workspace has no .mcp.json at all, or one whose servers are not
// approved, and how to give some.
func noServers(file string) string {
	if _, err := os.Lstat(file); errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("no MCP servers: there is no %s and no --mcp-config (write one, or give --mcp-config FILE)", file)
	}
	return fmt.Sprintf("no MCP servers: none approved in %s (`myelin mcp trust` shows and approves it) and no --mcp-config", file)
}
