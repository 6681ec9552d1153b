// Package mcpserver owns myelin as an MCP server (`myelin mcp serve`): it
// offers a tool registry to an MCP host (Claude Code, Codex, Cursor, any
// client of the protocol) over stdio or streamable HTTP, each call run by
// a tool.Dispatcher — checked by the Gate, its result converted once by
// package result, exactly as myelin's own model gets it — and what it
// holds as resources: stored conversations and the workspace's files.
//
// It is built on the MCP Go SDK's server, which keeps the protocol's
// lifecycle, pagination, ping, cancellation and sessions. It must not
// convert a result itself (result.Output's text is what the host gets),
// decide what may run (the Gate does), or guard its HTTP endpoint against
// other hosts and origins (the caller wraps Handler: internal/httpguard).
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
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
	// Gate checks every call from the host before it runs (SPEC §14);
	// nil runs every call.
	Gate tool.Gate
	// Timeout bounds each call; 0 means tool.DefaultTimeout.
	Timeout time.Duration
	// Workspace, when set, is offered as file:// resources (spill files
	// among them).
	Workspace *workspace.Workspace
	// Store, when set, offers its conversations as
	// myelin://conversations/{id} resources.
	Store history.Store
	// Fixtures adds the tools, resources and prompts the MCP conformance
	// suite's server scenarios name (internal/mcpfixtures). For tests
	// only: `myelin mcp serve --conformance-fixtures`.
	Fixtures bool
}

// Server is myelin as an MCP server. Make it with New.
type Server struct {
	cfg Config
	sdk *sdk.Server

	mu    sync.Mutex
	tools *tool.Registry
	names []string // the tool names registered on sdk
}

// New makes a Server offering c's tools.
func New(c Config) *Server {
	name, version := c.Name, c.Version
	if name == "" {
		name = "myelin"
	}
	s := &Server{cfg: c}
	opts := &sdk.ServerOptions{}
	if c.Fixtures {
		opts.CompletionHandler = mcpfixtures.Complete
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: name, Version: version}, opts)
	s.SetTools(c.Tools)
	if c.Fixtures {
		mcpfixtures.Register(s.sdk)
	}
	return s
}

// SetTools offers reg's tools in place of those offered so far; hosts are
// told the list changed (notifications/tools/list_changed).
func (s *Server) SetTools(reg *tool.Registry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.names) > 0 {
		s.sdk.RemoveTools(s.names...)
	}
	s.tools, s.names = reg, nil
	if reg == nil {
		return
	}
	for _, t := range reg.Tools() {
		s.sdk.AddTool(sdkTool(t), s.handler(t.Name))
		s.names = append(s.names, t.Name)
	}
}

// sdkTool is t as the host sees it.
func sdkTool(t *tool.Tool) *sdk.Tool {
	var schema any = map[string]any{"type": "object"}
	if t.InputSchema != nil {
		schema = t.InputSchema
	}
	out := &sdk.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}
	if t.OutputSchema != nil {
		out.OutputSchema = t.OutputSchema
	}
	return out
}

// handler runs a host's call of the tool name through a Dispatcher.
func (s *Server) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.mu.Lock()
		d := tool.Dispatcher{Tools: s.tools, Env: s.cfg.Env, Timeout: s.cfg.Timeout, Gate: s.cfg.Gate}
		s.mu.Unlock()
		out := d.Call(ctx, tool.Call{ID: callID(), Name: name, Input: req.Params.Arguments})
		return callResult(out), nil
	}
}

// callResult is out as the host gets it: its text, its images, its
// structured content.
func callResult(out result.Output) *sdk.CallToolResult {
	r := &sdk.CallToolResult{IsError: out.IsError, Content: []sdk.Content{&sdk.TextContent{Text: out.Text}}}
	for _, im := range out.Images {
		r.Content = append(r.Content, &sdk.ImageContent{MIMEType: im.MIMEType, Data: im.Data})
	}
	if out.Structured != nil {
		r.StructuredContent = json.RawMessage(out.Structured)
	}
	return r
}

// callID names a host's call: hosts do not give one, and a spill file is
// named by it.
func callID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mcp_" + hex.EncodeToString(b[:])
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
// own. The caller guards it (internal/httpguard): it checks no host,
// origin or token itself.
func (s *Server) Handler() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{})
}

// Asker puts what the permission policy asks of a host's call to the
// host's user (approval.Gate's Asker): by elicitation, when the host
// supports it; otherwise approval.ErrNoOne, and the call is denied with
// the rule that would allow it.
func (s *Server) Asker() approval.Asker { return noOne{} }

// noOne asks no one.
type noOne struct{}

func (noOne) Ask(context.Context, approval.Request) (approval.Answer, error) {
	return approval.Answer{}, approval.ErrNoOne
}
