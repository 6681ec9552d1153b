// Package mcpserver owns myelin as an MCP server (`myelin mcp serve`): it
// offers a tool registry to an MCP host (Claude Code, Codex, Cursor, any
// client of the protocol) over stdio or streamable HTTP, each call run by
// a tool.Dispatcher — checked by the Gate, its result converted once by
// package result, exactly as myelin's own model gets it — and what it
// holds as resources: stored conversations and the workspace's files.
//
// It is built on the MCP Go SDK's server, which keeps the protocol's
// lifecycle, pagination, ping, cancellation and sessions. What it adds is
// in files of their own: the tools as the host sees them and their calls
// (tools.go, turns.go, progress.go), the logging a host receives (log.go),
// the questions the permission policy puts to the host's user (ask.go),
// the resources with their subscriptions (resources.go, files.go,
// conversations.go, subscribe.go), what the permission policy lets a
// host be shown of them (policy.go), and the events kept for a host
// that resumes its stream (events.go).
//
// It must not convert a result itself (result.Output's text is what the
// host gets), decide what may run (the Gate does), or guard its HTTP
// endpoint against other hosts and origins (the caller wraps Handler:
// internal/httpguard).
package mcpserver

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/mcpfixtures"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// Config is what a Server offers, and how its calls run.
type Config struct {
	// Name and Version are the server's, told to hosts on initialize.
	Name, Version string
	// Tools are the tools offered; SetTools replaces them.
	Tools *tool.Registry
	// Env is the conversion's environment: the workspace's store for
	// spills and the caps (contract §5).
	Env result.Env
	// Gate checks every call from the host before it runs (SPEC §14),
	// and the calls those calls make (a script's, through the call's
	// context: tool.WithGate); nil runs every call. An approval.Gate
	// whose Asker is the server's own (Server.Asker) puts what it asks
	// to the host's user.
	Gate tool.Gate
	// Timeout bounds each call; 0 means tool.DefaultTimeout.
	Timeout time.Duration
	// Workspace, when set, is offered as file:// resources: its spill
	// files listed, any of its files read by URI, each as far as Gate
	// lets it be read (policy.go).
	Workspace *workspace.Workspace
	// Store, when set, offers its conversations as
	// myelin://conversations/{id} resources.
	Store history.Store
	// PageSize is how many items a page of tools/list (and of the other
	// lists) holds at most; 0 means the SDK's default (1000).
	PageSize int
	// Poll is how often the resources a host subscribed to are looked at
	// for a change (notifications/resources/updated); 0 means every
	// second.
	Poll time.Duration
	// SessionTimeout is how long a Handler's session may stand idle —
	// no request of its host in flight, its standing GET stream
	// included — before it is closed, with its subscriptions: a host
	// that leaves without a DELETE does not keep its session, and the
	// polling of what it subscribed to, for good (idle.go). 0 means
	// DefaultSessionTimeout; a negative one never closes a session.
	SessionTimeout time.Duration
	// WriteStall is how long a Handler's write to a host may make no
	// progress before the host's stream is cut (stall.go): a host that
	// never reads its stream cannot hold the notifications of the
	// others. 0 means DefaultWriteStall.
	WriteStall time.Duration
	// HostChecked says the caller of Handler checks each request's Host
	// itself, as internal/httpguard does (a loopback name unless there is
	// a token): the SDK's own check, which refuses every name but a
	// loopback one on a loopback listener, is then off, so that a token
	// lets a same-machine proxy's names through as myelin serve does.
	// Leave it false for a Handler not so guarded.
	HostChecked bool
	// Fixtures adds the tools, resources and prompts the MCP conformance
	// suite's server scenarios name (internal/mcpfixtures). For tests
	// only: `myelin mcp serve --conformance-fixtures`.
	Fixtures bool
}

// DefaultPoll is how often subscribed resources are looked at when
// Config.Poll is 0.
const DefaultPoll = time.Second

// DefaultSessionTimeout is how long a Handler's session may stand idle
// when Config.SessionTimeout is 0.
const DefaultSessionTimeout = 30 * time.Minute

// Server is myelin as an MCP server. Make it with New.
type Server struct {
	cfg     Config
	sdk     *sdk.Server
	key     []byte  // the key of input requests' states (inputs.go)
	turns   turns   // who may run now: Concurrent calls together, the others alone
	schemas schemas // the outputSchemas results are checked against (results.go)

	mu    sync.Mutex
	tools *tool.Registry
	names map[string]bool // the tool names registered on sdk

	res  resources     // the resources listed (resources.go)
	subs subscriptions // what hosts subscribed to (subscribe.go)
	idle idleSessions  // the Handler's sessions' activity (idle.go)

	reads *readTurns // the turns of resources/read (readbound.go)
	// heldRead, when a test sets it, is called by each read once it has
	// its turn
	heldRead func(*sdk.ReadResourceRequest)
}

// New makes a Server offering c's tools, and c's workspace and store as
// resources.
func New(c Config) *Server {
	name, version := c.Name, c.Version
	if name == "" {
		name = "myelin"
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.WriteStall <= 0 {
		c.WriteStall = DefaultWriteStall
	}
	s := &Server{cfg: c, names: map[string]bool{}, key: make([]byte, 32), reads: newReadTurns()}
	_, _ = rand.Read(s.key)
	opts := &sdk.ServerOptions{
		PageSize: c.PageSize,
		// tools and resources are declared even while none is offered:
		// SetTools and a call that spills may add them
		Capabilities: &sdk.ServerCapabilities{
			Logging:   &sdk.LoggingCapabilities{},
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
	}
	if c.Fixtures {
		opts.CompletionHandler = mcpfixtures.Complete
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: name, Version: version}, opts)
	s.SetTools(c.Tools)
	s.addTemplates()
	s.syncResources(context.Background())
	if c.Fixtures {
		mcpfixtures.Register(s.sdk)
	}
	return s
}

// Serve serves one host over t (a &sdk.StdioTransport{} for stdio) until
// it disconnects or ctx is done.
func (s *Server) Serve(ctx context.Context, t sdk.Transport) error {
	if err := s.sdk.Run(ctx, t); err != nil {
		return fmt.Errorf("serving MCP: %w", err)
	}
	return nil
}

// Handler serves hosts over streamable HTTP, each in a session of its
// own. Its streams can be resumed (MCP 2025-11-25, "Resumability and
// Redelivery"): each SSE stream starts with a priming event, and the
// events of a stream closed early are kept in memory (at most MaxEvents
// over all sessions, the largest session's oldest dropped first:
// events.go) for a host that reconnects with Last-Event-ID. The caller guards it
// (internal/httpguard): it checks no token, host or origin itself
// beyond the SDK's own check of a loopback request's Host, off when
// Config.HostChecked says the caller checks it. A session idle for
// Config.SessionTimeout is closed (idle.go); a write to a host that
// makes no progress for Config.WriteStall cuts its stream (stall.go).
func (s *Server) Handler() http.Handler {
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{EventStore: newEventStore(MaxEvents), DisableLocalhostProtection: s.cfg.HostChecked})
	h = bounded(h, s.cfg.WriteStall)
	if s.cfg.SessionTimeout < 0 {
		return h
	}
	return s.keepAlive(h, s.cfg.SessionTimeout)
}
