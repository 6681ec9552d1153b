package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/mcpserver"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

const mcpServeUsage = `Usage:
  myelin mcp serve [--workspace DIR] [--allow-shell] [tool flags]
      Serve the workspace's tools to an MCP host (Claude Code, Codex,
      Cursor...) over stdio: its standard input and output carry the
      protocol, its log goes to stderr. It ends, exit 0, when the host
      closes its standard input.
  myelin mcp serve --http ADDR [--token TOKEN] [flags]
      The same over streamable HTTP on ADDR (host:port), with the auth rules
      of myelin serve: a token is needed off the loopback interface, and a
      request for another host or from another origin is refused.
  myelin mcp serve --agent [--provider NAME] [--model NAME] [run's flags]
      Offer the tool agent--run too: each call runs a turn of a myelin agent, on
      its own provider and model with the tools served here, on the task it
      is given, stored as a conversation (a new one, or the one the call
      names), and answers with its final answer (docs/mcp.md, "The agent
      tool"). The provider's key is read as run reads it.

The tools: the workspace's (workspace--read, --grep, --list, --glob, --edit,
--write), the MCP servers' of the workspace's approved .mcp.json and of
--mcp-config, shell--run with --allow-shell (its commands sandboxed as in
run: --sandbox), code_execution unless --no-code-execution. When those
servers' tools change, the host is told (tools/list_changed) within a
second. The history store's conversations (--store) are offered as
resources.

Every result reaches the host as myelin's own model gets it (docs/mcp.md):
a big one spilled in the workspace, the host given its head and the
workspace--read call that pages the rest. The permission rules (--allow,
--ask, --deny, --yes) check every call from the host, and every call of
the agent's: what they ask about is put to the host's user when the host
can ask (elicitation), and is denied otherwise, the denial naming the
--allow that would allow it.
`

// mcpToolsPoll is how often mcp serve looks whether the MCP servers
// behind it changed their tools (tools/list_changed from them): the host
// is told within about that time.
const mcpToolsPoll = 500 * time.Millisecond

// defaultAgentTime bounds one call of the agent tool unless --agent-time
// says otherwise.
const defaultAgentTime = 30 * time.Minute

// mcpServeFlags are the flags of myelin mcp serve: run's (less
// notMCPServeFlags), of which those not in servedFlags go with --agent,
// and its own.
type mcpServeFlags struct {
	agentFlags
	http     string
	token    string
	fixtures bool
	// noConversations: --no-conversation-resources, the store's
	// conversations not offered as resources
	noConversations bool
	agent           bool
	agentTime       time.Duration
	// pageSize, poll and sessionTimeout are mcpserver.Config's PageSize,
	// Poll and SessionTimeout (--page-size, --poll, --session-timeout).
	pageSize       int
	poll           time.Duration
	sessionTimeout time.Duration
	// agentOnly are the flags that set up the agent tool, refused
	// without --agent (set).
	agentOnly map[string]bool
}

// notMCPServeFlags are run's flags mcp serve does not take: those that
// pick or wait for a conversation (a call of the agent tool names its
// own), background scripts' (nothing would take their wakes: a host's
// call ends with its result) and --show-thinking (no one reads stderr
// as the agent thinks).
var notMCPServeFlags = map[string]bool{
	"conversation": true, "continue": true, "fork": true, "wait": true,
	"background-scripts": true, "background-scripts-total": true, "background-wakes": true,
	"wake-gap": true, "background-lifetime": true, "show-thinking": true,
}

// servedFlags are the flags of run that mcp serve takes without --agent:
// where the workspace and its history store are, the inline cap, the
// tools' flags and the permission rules.
func servedFlags() map[string]bool {
	fs := newFlagSet("")
	var t toolsetFlags
	t.add(fs)
	var p permFlags
	p.add(fs)
	names := map[string]bool{"workspace": true, "inline-cap": true, "store": true}
	fs.VisitAll(func(fl *flag.Flag) { names[fl.Name] = true })
	return names
}

func (f *mcpServeFlags) set() *flag.FlagSet {
	fs := newFlagSet("mcp serve")
	served := servedFlags()
	f.agentOnly = map[string]bool{"agent-time": true}
	f.agentFlags.set("mcp serve").VisitAll(func(fl *flag.Flag) {
		if notMCPServeFlags[fl.Name] {
			return
		}
		usage := fl.Usage
		if !served[fl.Name] {
			f.agentOnly[fl.Name] = true
			usage = "with --agent, " + usage
		}
		fs.Var(fl.Value, fl.Name, usage)
	})
	fs.StringVar(&f.http, "http", "", "serve streamable HTTP on `ADDR` (host:port) instead of stdio")
	fs.StringVar(&f.token, "token", "", "with --http, the `TOKEN` every request must send as Authorization: Bearer TOKEN (default $MYELIN_TOKEN); required off the loopback interface")
	fs.BoolVar(&f.agent, "agent", false, "offer the tool agent--run: a turn of a myelin agent on its own provider (--provider, --model, --system...) on the task given, stored as a conversation, its final answer the result (docs/mcp.md)")
	fs.DurationVar(&f.agentTime, "agent-time", defaultAgentTime, "with --agent, the most time one call of agent may take, a `duration`: then its turn is cancelled, its answer as far as it came stored")
	fs.IntVar(&f.pageSize, "page-size", 0, "the most items a page of tools/list (and of the other lists) holds, `N`; 0: the MCP SDK's 1000")
	fs.DurationVar(&f.poll, "poll", mcpserver.DefaultPoll, "how often the resources a host subscribed to are looked at for a change, a `duration`")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", mcpserver.DefaultSessionTimeout, "with --http, how long a host's session may stand idle (no request in flight) before it is closed with its subscriptions, a `duration`; negative: never")
	fs.BoolVar(&f.noConversations, "no-conversation-resources", false, "do not offer the history store's conversations as resources: the permission rules do not govern them, so a host could read a stored tool result that a rule keeps from workspace--read (docs/mcp.md)")
	fs.BoolVar(&f.fixtures, "conformance-fixtures", false, "FOR TESTS ONLY: add the tools, resources and prompts the MCP conformance suite's server scenarios name (docs/mcp.md)")
	return fs
}

// check refuses the agent's flags without --agent, which would be
// silently moot, and values out of their ranges; set holds the flags the
// command line gave.
func (f *mcpServeFlags) check(set map[string]bool) error {
	if !f.agent {
		var moot []string
		for name := range set {
			if f.agentOnly[name] {
				moot = append(moot, "--"+name)
			}
		}
		if len(moot) > 0 {
			slices.Sort(moot)
			them := "it"
			if len(moot) > 1 {
				them = "them"
			}
			return fmt.Errorf("%s set up the agent tool, which is offered only with --agent: give --agent too, or leave %s out", strings.Join(moot, ", "), them)
		}
	}
	if f.agentTime <= 0 {
		return fmt.Errorf("--agent-time %v: give a positive duration (default %v)", f.agentTime, defaultAgentTime)
	}
	if f.pageSize < 0 {
		return fmt.Errorf("--page-size %d: give a number of items, or 0 for the MCP SDK's default (1000)", f.pageSize)
	}
	if f.poll <= 0 {
		return fmt.Errorf("--poll %v: give a positive duration (default %v)", f.poll, mcpserver.DefaultPoll)
	}
	if set["token"] && f.http == "" {
		return errors.New("--token is for --http: over stdio the host that started the process is the one client, and there is no request to check")
	}
	if set["session-timeout"] && f.http == "" {
		return errors.New("--session-timeout is for --http: over stdio there is one session, the process's, which ends with its stdin")
	}
	if set["session-timeout"] && f.sessionTimeout == 0 {
		return fmt.Errorf("--session-timeout 0s: give a duration (default %v), or a negative one for sessions that never close", mcpserver.DefaultSessionTimeout)
	}
	return f.agentFlags.check(set)
}

// mcpServeCommand is myelin mcp serve: args are those after "serve".
func mcpServeCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "mcp serve"
	var f mcpServeFlags
	fs := f.set()
	if flagName := refusedFlag(args, notMCPServeFlags); flagName != "" {
		why := "a call of the agent tool names its conversation in its input"
		if !notServeFlags[flagName] {
			why = "mcp serve runs no background scripts and shows no thinking: a host's call ends with its result"
		}
		return usageError(stderr, name, fmt.Sprintf("--%s is run's and chat's: %s", flagName, why))
	}
	pos, code, done := parseCommand(name, mcpServeUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, name, fmt.Sprintf("takes no arguments, got %q", pos))
	}
	if err := f.check(explicit(fs)); err != nil {
		return usageError(stderr, name, err.Error())
	}
	if err := f.perm.load(f.workspace, stderr); err != nil {
		return usageError(stderr, name, err.Error())
	}
	if f.agent {
		f.perm.policy.User = append(f.perm.policy.User, agentRule)
	}
	flush, err := startTelemetry(ctx, name, stderr)
	if err != nil {
		return usageError(stderr, name, err.Error())
	}
	defer flush()
	sv, err := openServed(ctx, &f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
		return exitError
	}
	defer sv.close()
	reg, err := sv.hostTools()
	if err != nil {
		fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
		return exitError
	}
	store := sv.s.store // its conversations offered as resources
	if f.noConversations {
		store = nil
	}
	srv := mcpserver.New(mcpserver.Config{Name: "myelin", Version: version(), Tools: reg, Env: sv.env, Gate: sv.gate,
		Workspace: sv.s.ws, Store: store, Fixtures: f.fixtures,
		PageSize: f.pageSize, Poll: f.poll, SessionTimeout: f.sessionTimeout,
		HostChecked: f.http != ""}) // --http: httpguard checks the Host (mcpserve_http.go)
	sv.gate.Asker = srv.Asker() // before any call is checked
	fmt.Fprintln(stderr, sv.describe(reg, f.http, !f.noConversations))

	ctx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		sv.watch(ctx, srv, mcpToolsPoll, stderr)
	}()
	defer func() {
		stop()
		<-watched // before the toolset closes
		sv.stop() // the agent's turns end, their answers stored
	}()
	if f.http == "" {
		if err := srv.Serve(ctx, &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
			return exitError
		}
		return exitOK
	}
	return serveMCPHTTP(ctx, srv, f, stderr)
}

// agentRule allows the host's calls of the agent tool: --agent is the
// user's word for them. The agent's own calls are each checked by the
// policy; an ask or deny rule naming agent--run still wins over this
// one. (Its name has "--", as every tool myelin offers: a rule of one
// word without "--" or "_" names a command of shell--run's.)
var agentRule = permission.Rule{Decision: permission.Allow, Tool: mcpAgentName, Text: mcpAgentName, Source: "flag --agent"}

// mcpServed is what mcp serve offers, and what it holds open.
type mcpServed struct {
	s     *session // the workspace, the store and the toolset; with --agent, the agent
	where string   // where the store is, for people
	env   result.Env
	gate  *approval.Gate
	agent *mcpAgent // nil without --agent
	// mu guards the toolset's registry, which watch rebuilds.
	mu sync.Mutex
}

// openServed opens the workspace, its history store and its tools, the
// agent of the agent tool with --agent (openAgent, as run makes it), and
// the permission gate every call from the host goes through: the
// agent's own with --agent, so that what a person allowed for the
// session holds for both.
func openServed(ctx context.Context, f *mcpServeFlags, stderr io.Writer) (*mcpServed, error) {
	f.tools.mcp.ui = newMCPUI(nil, stderr) // no terminal: the servers' notices on stderr
	if f.agent {
		s, where, err := openAgent(ctx, f.agentFlags, stderr)
		if err != nil {
			return nil, err
		}
		gate, ok := s.agent.Gate.(*approval.Gate)
		if !ok {
			s.close()
			return nil, fmt.Errorf("the agent's gate is a %T, not the permission policy's", s.agent.Gate)
		}
		sv := &mcpServed{s: s, where: where, env: s.agent.Env, gate: gate}
		sv.agent = newMCPAgent(s.agent, f.agentTime)
		return sv, nil
	}
	ws, err := workspace.Open(f.workspace)
	if err != nil {
		return nil, err
	}
	if err := workspace.CheckOwn(ws.Dir()); err != nil {
		ws.Close()
		return nil, fmt.Errorf("refusing to start: %w", err)
	}
	store, where, err := openSessionStore(ctx, storeChoice(f.store), ws.Dir())
	if err != nil {
		ws.Close()
		return nil, err
	}
	s := &session{ws: ws, store: store}
	env := result.Env{Store: ws, Limits: result.Limits{Agent: f.inlineCap}}
	if s.tools, err = openToolset(ctx, ws, f.tools, env, stderr); err != nil {
		s.close()
		return nil, err
	}
	gate, err := f.perm.gate(ws.Dir(), stderr)
	if err != nil {
		s.close()
		return nil, err
	}
	return &mcpServed{s: s, where: where, env: env, gate: gate}, nil
}

// hostTools is the registry offered to the host: the toolset's, and the
// agent tool with --agent. The agent runs over the toolset's alone, so
// neither it nor code_execution's scripts call agent.
func (sv *mcpServed) hostTools() (*tool.Registry, error) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.agent == nil {
		return sv.s.tools.reg, nil
	}
	sv.agent.setTools(sv.s.tools.reg)
	reg := &tool.Registry{}
	if err := reg.Add(sv.s.tools.reg.Tools()...); err != nil {
		return nil, err
	}
	if err := reg.Add(sv.agent.tool); err != nil {
		return nil, fmt.Errorf("offering the agent tool: %w", err)
	}
	return reg, nil
}

// describe is the line mcp serve's log starts with: what it serves,
// from where, over what.
func (sv *mcpServed) describe(reg *tool.Registry, httpAddr string, conversations bool) string {
	over := "stdio"
	if httpAddr != "" {
		over = "streamable HTTP"
	}
	offered := "conversations of " + sv.where
	if !conversations {
		offered = "no conversations (--no-conversation-resources)"
	}
	line := fmt.Sprintf("myelin mcp serve: serving the workspace %s over %s; %d tools: %s; %s",
		sv.s.ws.Dir(), over, len(reg.Names()), strings.Join(reg.Names(), ", "), offered)
	if sv.agent != nil {
		line += fmt.Sprintf("; the agent tool runs %s", sv.agent.model())
	}
	return line
}

// watch rebuilds the tools every period while ctx lasts, when the MCP
// servers behind them changed theirs, and offers the new set to the host
// (tools/list_changed) and to the agent's next calls. A set that cannot
// be built is said once on stderr; the old one stays offered.
func (sv *mcpServed) watch(ctx context.Context, srv *mcpserver.Server, period time.Duration, stderr io.Writer) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	said := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sv.mu.Lock()
		changed, err := sv.s.tools.refresh()
		sv.mu.Unlock()
		if err != nil {
			if msg := err.Error(); msg != said {
				fmt.Fprintf(stderr, "myelin mcp serve: %v\n", err)
				said = msg
			}
			continue
		}
		if !changed {
			continue
		}
		said = ""
		reg, err := sv.hostTools()
		if err != nil {
			fmt.Fprintf(stderr, "myelin mcp serve: the MCP servers' tools changed, and the new set cannot be offered (the old one is): %v\n", err)
			continue
		}
		srv.SetTools(reg)
		fmt.Fprintf(stderr, "myelin mcp serve: the MCP servers' tools changed; offering the new set (%d tools)\n", len(reg.Names()))
	}
}

// stop ends the agent's running turns, which store their answers as far
// as they came, and waits for them.
func (sv *mcpServed) stop() {
	if sv.agent != nil {
		sv.agent.stop()
	}
}

func (sv *mcpServed) close() { sv.s.close() }

// nopWriteCloser is w with a Close that does nothing: the process's
// standard output outlives the MCP session.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
