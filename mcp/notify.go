package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/workspace"
)

// Progress is a server's progress notification for a call in flight.
type Progress struct {
	Server string
	// Tool is the name the tool is offered under.
	Tool     string
	Progress float64
	Total    float64 // 0 when the server does not know
	Message  string
}

// progressTokens numbers the calls of this process that ask for progress.
var progressTokens atomic.Int64

// withProgress asks the server for progress notifications on a call, when
// there is someone to show them to, and records which call the token is.
func (s *server) withProgress(p *sdk.CallToolParams, offered string) (done func()) {
	if s.opts.Progress == nil {
		return func() {}
	}
	token := fmt.Sprintf("myelin-%d", progressTokens.Add(1))
	p.SetProgressToken(token)
	s.calls.Store(token, offered)
	// The SDK hands notifications on apart from the reply, which can
	// overtake them: the token is known a while after the call.
	return func() { time.AfterFunc(s.opts.grace(), func() { s.calls.Delete(token) }) }
}

// progress passes a server's progress notification on, for a call of its
// (the caller tells whether it is still in flight).
func (s *server) progress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	token, _ := p.ProgressToken.(string)
	offered, ok := s.calls.Load(token)
	if !ok || s.opts.Progress == nil {
		return
	}
	s.opts.Progress(Progress{Server: s.cfg.Name, Tool: offered.(string), Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// logMessage writes a server's logging notification to its log file,
// .myelin/logs/mcp-<server>.log (where a stdio server's stderr goes too).
func (s *server) logMessage(_ context.Context, req *sdk.LoggingMessageRequest) {
	p := req.Params
	data, err := json.Marshal(p.Data)
	if err != nil {
		data = []byte(fmt.Sprintf("%v", p.Data))
	}
	if str, ok := p.Data.(string); ok {
		data = []byte(str)
	}
	logger := ""
	if p.Logger != "" {
		logger = " " + p.Logger
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.notes == nil {
		l, err := workspace.OpenLog(s.opts.Dir, workspace.OwnDir+"/logs/mcp-"+safe(s.cfg.Name)+".log", logMax)
		if err != nil {
			return // a log that cannot be opened safely: cmd/myelin warns of it
		}
		s.notes = l
	}
	fmt.Fprintf(s.notes, "%s [%s%s] %s\n", time.Now().UTC().Format(time.RFC3339), p.Level, logger, data)
}

// closeNotes closes the log logMessage opened, if it did.
func (s *server) closeNotes() {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.notes != nil {
		s.notes.Close()
		s.notes = nil
	}
}

// toolsChanged lists the server's tools again after it said they changed,
// and has the Set name them anew: callers see the new set from their next
// Tools, which a conversation asks for between turns, never within one.
func (s *server) toolsChanged(context.Context, *sdk.ToolListChangedRequest) {
	// The notification is handled on the session's read loop: listing from
	// it would wait on itself.
	go func() {
		s.mu.Lock()
		l := s.link
		s.mu.Unlock()
		if l == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.startTimeout())
		defer cancel()
		var tools []*sdk.Tool
		for t, err := range l.sess.Tools(ctx, nil) {
			if err != nil {
				s.opts.notify(fmt.Sprintf("MCP server %s said its tools changed, but listing them failed: %v; its tools are as they were", s.cfg.Name, err))
				return
			}
			tools = append(tools, t)
		}
		s.mu.Lock()
		s.listed = tools
		s.mu.Unlock()
		if s.set != nil {
			s.set.rename()
		}
	}()
}
