package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/tool"
)

// SetTools offers reg's tools in place of those offered so far; hosts are
// told the list changed (notifications/tools/list_changed, sent once for
// a burst of changes). The new tools are added before the old ones that
// are gone are removed, so that a host listing meanwhile never sees an
// empty list.
func (s *Server) SetTools(reg *tool.Registry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = reg
	now := map[string]bool{}
	if reg != nil {
		for _, t := range reg.Tools() {
			s.sdk.AddTool(sdkTool(t), s.handler(t.Name))
			now[t.Name] = true
		}
	}
	var gone []string
	for n := range s.names {
		if !now[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveTools(gone...)
	}
	s.names = now
}

// registry is the registry offered now.
func (s *Server) registry() *tool.Registry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// sdkTool is t as the host sees it: its name, a title from its summary,
// its description and schemas, and annotations from what it says of
// itself (docs/mcp.md, "What a host gets").
func sdkTool(t *tool.Tool) *sdk.Tool {
	title := titleOf(t)
	out := &sdk.Tool{Name: t.Name, Title: title, Description: t.Description, InputSchema: inputSchema(t.InputSchema)}
	if objectSchema(t.OutputSchema) {
		out.OutputSchema = t.OutputSchema
	}
	a := &sdk.ToolAnnotations{Title: title, ReadOnlyHint: t.ReadOnly, IdempotentHint: t.Rerun}
	switch {
	case t.ReadOnly:
		// meaningless for a tool that changes nothing, but said so that
		// no host reads the protocol's default (true)
		a.DestructiveHint = new(bool)
	case t.Destructive:
		yes := true
		a.DestructiveHint = &yes
	}
	// Left out, destructiveHint and openWorldHint mean true: a tool
	// that changes something may destroy (myelin's own writes overwrite
	// and say nothing else), and what a tool reaches (a command's
	// network, another server's world) is not known here.
	out.Annotations = a
	return out
}

// titleOf is a tool's title: its summary without a final period, at most
// 80 characters.
func titleOf(t *tool.Tool) string {
	s := strings.TrimSuffix(t.Summary(), ".")
	if utf8.RuneCountInString(s) > 80 {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:79])) + "…"
	}
	return s
}

// inputSchema is the input schema a host is given: s, or {"type":
// "object"} when s is nil or not an object's schema (MCP's arguments are
// always an object, and the SDK refuses any other schema). The call's
// input is still checked against the tool's own schema.
func inputSchema(s *jsonschema.Schema) any {
	if s == nil || s.Type != "object" {
		return map[string]any{"type": "object"}
	}
	return s
}

// objectSchema reports whether s is an object's schema: the only
// outputSchema MCP hosts take (the Node SDK's client refuses a tools/list
// holding any other).
func objectSchema(s *jsonschema.Schema) bool { return s != nil && s.Type == "object" }

// handler runs a host's call of the tool name through a Dispatcher: the
// call's session goes on its context (for the Asker), its gate on the
// context too (for the calls a script of it makes), and its progress to
// the host when the host asked for it.
func (s *Server) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		reg := s.registry()
		var t *tool.Tool
		if reg != nil {
			t = reg.Get(name)
		}
		id := callID()
		ss := req.Session
		ctx = withSession(ctx, ss)
		ctx = approval.WithSession(ctx, "mcp:"+sessionID(ss))
		ctx = tool.WithGate(ctx, s.cfg.Gate)
		var input json.RawMessage
		var token any
		in := &inputs{key: s.key, callID: id}
		if req.Params != nil {
			input, token = req.Params.Arguments, req.Params.GetProgressToken()
			in.responses, in.state = req.Params.InputResponses, req.Params.RequestState
		}
		ctx = withInputs(ctx, in)
		var prog *progress
		if token != nil && ss != nil {
			prog = startProgress(ctx, ss, token)
			ctx = tool.WithProgress(ctx, prog.report)
		}
		g := &turnGate{s: s, inner: s.cfg.Gate}
		d := tool.Dispatcher{Tools: reg, Env: s.cfg.Env, Timeout: s.cfg.Timeout, Gate: g,
			Ruled: func(_ int, c tool.Call, rec permission.Record) {
				if rec.Decision != permission.Allow.String() && in.need == nil {
					s.log(ctx, ss, "warning", fmt.Sprintf("call %s of %s denied (by %s): %s", c.ID, c.Name, rec.By, rec.Reason))
				}
			}}
		s.log(ctx, ss, "debug", fmt.Sprintf("call %s of %s started", id, name))
		start := time.Now()
		out := d.Call(ctx, tool.Call{ID: id, Name: name, Input: input})
		g.done()
		if prog != nil {
			prog.stop()
		}
		if in.need != nil {
			// not run: the question goes back to the host, which sends
			// the call again with the answer
			s.log(ctx, ss, "debug", fmt.Sprintf("call %s of %s waits for the host's user: its question went back as an input request", id, name))
			return in.inputRequired(), nil
		}
		s.logEnd(ctx, ss, id, name, out, time.Since(start))
		if out.SpillPath != "" || len(out.Files) > 0 || t != nil && !t.ReadOnly {
			// the call may have added a spill file or a conversation
			s.syncResources(ctx)
		}
		return s.callResult(t, out), nil
	}
}

// callID names a host's call: hosts do not give one, and a spill file is
// named by it.
func callID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mcp_" + hex.EncodeToString(b[:])
}

// turnGate is the gate of one host's call: the server's Gate, then, once
// the call is allowed, its turn to run (turns). The wait for a turn
// comes after any question put to the host's user, and before the
// call's timeout starts.
type turnGate struct {
	s     *Server
	inner tool.Gate
	alone bool // the turn taken was a call's alone
	took  bool
}

// Check decides the call by the server's Gate and takes its turn.
func (g *turnGate) Check(ctx context.Context, q tool.Question) (tool.Ruling, error) {
	rul := tool.Ruling{Record: permission.Record{Decision: permission.Allow.String(), By: approval.ByDefault, Reason: "no permission policy", At: time.Now()}}
	if g.inner != nil {
		var err error
		if rul, err = g.inner.Check(ctx, q); err != nil || !rul.Allowed() {
			return rul, err
		}
	}
	if q.Tool != nil && q.Tool.Alongside && !q.Tool.ReadOnly {
		// it orders its own calls (the agent's turn, a subagent's), each
		// checked by the gate as it comes: a turn held for all of it would
		// hold every later write, and the calls behind that, for as long
		// as it runs
		return rul, nil
	}
	g.alone = q.Tool == nil || !q.Tool.Concurrent()
	if err := g.s.turns.take(ctx, g.alone); err != nil {
		return tool.Ruling{}, err
	}
	g.took = true
	return rul, nil
}

// done gives the turn back, once the call is over.
func (g *turnGate) done() {
	if g.took {
		g.s.turns.give(g.alone)
		g.took = false
	}
}
