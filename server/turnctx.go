package server

import (
	"context"
	"fmt"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/tool"
)

// turnInfo is what a turn's context carries for what happens during it
// outside the agent's own events: an MCP server's elicitation or sampling
// request (which conversation and turn it belongs to, and the turn's
// provider and model), a background script started (its conversation).
type turnInfo struct {
	conv, turn string
	agent      *agent.Agent
}

type turnKey struct{}

// turnContext is ctx for turn tid of conversation conv run by a: what
// MCP servers ask during its calls, and the approvals the permission gate
// asks for, are conv's; conv is the session of the gate's allow_session
// answers (approval.WithSession), so that one holds for the rest of the
// conversation and no other. (The background scripts its calls start are
// conv's too: the agent gives each call its conversation,
// tool.ConversationOf.)
func turnContext(ctx context.Context, conv, tid string, a *agent.Agent) context.Context {
	ctx = approval.WithSession(ctx, conv)
	return context.WithValue(ctx, turnKey{}, &turnInfo{conv: conv, turn: tid, agent: a})
}

// turnOf is the turn ctx is for, nil when it is not a turn's. A background
// script's calls carry the turn that started it (its context is made from
// the call's).
func turnOf(ctx context.Context) *turnInfo {
	ti, _ := ctx.Value(turnKey{}).(*turnInfo)
	if ti == nil {
		if conv := tool.ConversationOf(ctx); conv != "" {
			ti = &turnInfo{conv: conv}
		}
	}
	return ti
}

// currentTools are the tools a turn starting now offers: Tools' when set
// (the MCP servers' new set after a tools/list_changed), else the
// agent's. A failure keeps the agent's and says why.
func (s *Server) currentTools() (*tool.Registry, error) {
	if s.Tools == nil {
		return s.Agent.Tools, nil
	}
	reg, err := s.Tools()
	if err != nil || reg == nil {
		return s.Agent.Tools, err
	}
	return reg, nil
}

// withTools is a, or a clone of it, offering the current tools, and the
// notices its turn of conversation conv starts with: the tools changed
// since conv's last turn on this server, or could not be listed again.
// It is called as a turn starts, never within one, so that a turn's
// requests keep one tool list and the provider's cache holds.
func (s *Server) withTools(a *agent.Agent, conv string) (*agent.Agent, []string) {
	reg, err := s.currentTools()
	var notes []string
	if err != nil {
		notes = append(notes, fmt.Sprintf("the MCP servers' tools changed, and the new set cannot be offered (the old one is): %v", err))
	}
	if reg != a.Tools {
		if a == s.Agent {
			a = a.Clone()
		}
		a.Tools = reg
	}
	c := s.lockedConv(conv)
	last := c.tools
	c.tools = reg
	c.mu.Unlock()
	if last != nil && last != reg {
		notes = append(notes, fmt.Sprintf("the MCP servers' tools changed; this turn offers the new set (%d tools)", len(reg.Names())))
	}
	return a, notes
}
