package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/mcp"
)

// With a shared event log (Server.Events: serve --worker), the process
// that waits on an ask (an elicitation, an approval) is the one whose
// worker runs the turn, and a client's answer may reach any process. The
// answer then goes through the log: the process it reached checks it
// against the ask's event and appends it as a reply event
// (elicitation.reply, approval.reply), which the waiting process follows
// (followReplies) and takes the first of.

// EventElicitationReply is an answer to an elicitation posted to another
// process than the one waiting on it: elicitationReply. Its content is
// in the conversation's events, seen by its watchers.
const EventElicitationReply = "elicitation.reply"

// elicitationReply is the data of elicitation.reply.
type elicitationReply struct {
	ID      string         `json:"id"`
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// askEvents are the types of the events of one kind of ask: the event
// that asks, those that end it, and the reply passed through the log.
type askEvents struct{ asked, answered, expired, reply string }

// askEventsOf are the event types of asks of kind.
func askEventsOf(kind string) askEvents {
	if kind == kindApproval {
		return askEvents{EventApproval, EventApprovalAnswered, EventApprovalExpired, EventApprovalReply}
	}
	return askEvents{EventElicitation, EventElicitationAnswered, EventElicitationExpired, EventElicitationReply}
}

// replyIn is the reply to ask a that event data holds, false when it is
// another ask's or does not read.
func replyIn(a *ask, data json.RawMessage) (reply, bool) {
	if a.kind == kindApproval {
		var r approvalReply
		if json.Unmarshal(data, &r) != nil || r.ID != a.id {
			return reply{}, false
		}
		return reply{approval: approval.Answer{Choice: approval.Choice(r.Decision), Reason: r.Reason, By: answeredBy}}, true
	}
	var r elicitationReply
	if json.Unmarshal(data, &r) != nil || r.ID != a.id {
		return reply{}, false
	}
	return reply{mcp: mcp.Answer{Action: r.Action, Content: r.Content}}, true
}

// followReplies follows conversation a.conv's events after from for a
// reply to a, until one comes (it is delivered if a is still pending) or
// stop is closed.
func (s *Server) followReplies(a *ask, from int64, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	typ := askEventsOf(a.kind).reply
	after := from
	for {
		page, err := s.log.Since(ctx, a.conv, after)
		if err != nil {
			if ctx.Err() == nil {
				s.logf("server: following the replies to %s %s: %v", a.kind, a.id, err)
			}
			return
		}
		for _, ev := range page.Events {
			after = ev.Seq
			if ev.Type != typ {
				continue
			}
			r, ok := replyIn(a, ev.Data)
			if !ok {
				continue
			}
			as := &s.asks
			as.mu.Lock()
			if a.state == "pending" {
				as.deliver(a, r)
			}
			as.mu.Unlock()
			return
		}
		select {
		case <-page.More:
		case <-ctx.Done():
			return
		}
	}
}

// askedAcross is what a conversation's shared events say of one ask.
type askedAcross struct {
	// asked is the data of the event that asked it; nil when there is
	// none.
	asked json.RawMessage
	// endedBy is the type of the last event that ended it ("" while it
	// is pending); action, decision and reason are that event's. A
	// turn.started after it ends it too: a conversation has one writer,
	// so a turn that started since (another turn, or its own taken up
	// again after its process died or handed it back) means the process
	// that asked no longer runs the turn it asked in.
	endedBy                  string
	action, decision, reason string
}

// findAcross reads what conversation conv's events say of ask id of kind.
func (s *Server) findAcross(ctx context.Context, kind, conv, id string) (askedAcross, error) {
	var found askedAcross
	types := askEventsOf(kind)
	for after := int64(0); ; {
		page, err := s.log.Since(ctx, conv, after)
		if err != nil {
			return found, fmt.Errorf("reading the events of conversation %s: %w", conv, err)
		}
		if len(page.Events) == 0 {
			return found, nil
		}
		for _, ev := range page.Events {
			after = ev.Seq
			switch ev.Type {
			case types.asked, types.answered, types.expired, types.reply:
			case EventTurnStarted:
				if found.asked != nil && found.endedBy == "" {
					found.endedBy = EventTurnStarted // its process no longer runs its turn
				}
				continue
			default:
				continue
			}
			var head struct {
				ID       string `json:"id"`
				Action   string `json:"action"`
				Decision string `json:"decision"`
				Reason   string `json:"reason"`
			}
			if json.Unmarshal(ev.Data, &head) != nil || head.ID != id {
				continue
			}
			if ev.Type == types.asked {
				found.asked = ev.Data
				continue
			}
			found.endedBy, found.action, found.decision, found.reason = ev.Type, head.Action, head.Decision, head.Reason
		}
	}
}

// expiredAt says when an ask whose event gives expires (RFC 3339) has
// expired by now, "" when it has not (or expires does not read).
func expiredAt(expires string) string {
	if t, err := time.Parse(time.RFC3339Nano, expires); err == nil && time.Now().After(t) {
		return "it expired at " + expires
	}
	return ""
}

// answerAcross answers an elicitation this process is not waiting on,
// from the conversation's shared events: 404 when no elicitation eid is
// there, 409 when it has ended, was answered or has expired, 400 when the
// answer does not fit; else the reply is appended for the process
// waiting on it.
func (s *Server) answerAcross(w http.ResponseWriter, r *http.Request, conv, eid string, in ElicitationAnswer) {
	found, err := s.findAcross(r.Context(), kindElicitation, conv, eid)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if found.asked == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no elicitation %q of conversation %q (it may have ended long ago)", eid, conv))
		return
	}
	asked := &elicitationEvent{}
	var cut struct {
		Cut []string `json:"cut"`
	}
	if err := json.Unmarshal(found.asked, asked); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("elicitation %s's event does not read: %v", eid, err))
		return
	}
	ended := ""
	switch found.endedBy {
	case EventElicitationExpired:
		ended = fmt.Sprintf("elicitation %s has ended: %s; the MCP server was sent %q", eid, found.reason, found.action)
	case EventElicitationAnswered, EventElicitationReply:
		ended = fmt.Sprintf("elicitation %s was answered already (%s)", eid, found.action)
	case EventTurnStarted:
		ended = fmt.Sprintf("elicitation %s has ended: a turn of the conversation started after it, so the process that asked it no longer runs its turn (it stopped or handed the turn on)", eid)
	default:
		if at := expiredAt(asked.Expires); at != "" {
			ended = fmt.Sprintf("elicitation %s has ended: %s", eid, at)
		}
	}
	if ended != "" {
		writeError(w, http.StatusConflict, ended)
		return
	}
	if json.Unmarshal(found.asked, &cut) == nil && len(cut.Cut) > 0 {
		// its fields were cut to MaxEventBytes: an answer cannot be
		// checked against them here
		writeError(w, http.StatusConflict, fmt.Sprintf("elicitation %s's event was cut to %d bytes (%v), so this process cannot check an answer: send it to the server process whose turn asks", eid, MaxEventBytes, cut.Cut))
		return
	}
	e := &mcp.Elicitation{Server: asked.Server, Message: asked.Message, Mode: asked.Mode, URL: asked.URL, Schema: asked.Schema}
	for _, f := range asked.Fields {
		e.Fields = append(e.Fields, mcp.Field{Name: f.Name, Title: f.Title, Description: f.Description, Type: f.Type, Enum: f.Enum, Default: f.Default, Required: f.Required})
	}
	ans, err := checkAnswer(e, eid, in)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.passOn(w, r, conv, EventElicitationReply, elicitationReply{ID: eid, Action: ans.Action, Content: ans.Content}) {
		return
	}
	writeJSON(w, http.StatusOK, ElicitationAnswered{ID: eid, Action: ans.Action, Content: ans.Content})
}

// passOn appends reply v, of event type typ, to conversation conv's
// events for the process waiting on its ask, reporting whether it did
// (else the error is written: 400 for a reply over MaxEventBytes).
func (s *Server) passOn(w http.ResponseWriter, r *http.Request, conv, typ string, v any) bool {
	data, err := json.Marshal(v)
	if err == nil && len(data) > MaxEventBytes {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the answer is %d bytes as an event, over the %d an event carries to the process waiting on it", len(data), MaxEventBytes))
		return false
	}
	if err == nil {
		err = s.log.Append(r.Context(), conv, typ, data)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "passing the answer on: "+err.Error())
		return false
	}
	return true
}

// pendingAcross are the asks of kind of conversation conv that any
// process sharing the log waits on, oldest first: the data of each event
// that asked one which no later event ended (a turn.started included, as
// in findAcross), with the milliseconds left before it expires. Those in seen (this process's own, listed already)
// and those past their expires (the process that asked may have died)
// are left out.
func (s *Server) pendingAcross(ctx context.Context, kind, conv string, seen map[string]bool, now time.Time) ([]json.RawMessage, []int64, error) {
	types := askEventsOf(kind)
	var order []string
	asked := map[string]json.RawMessage{}
	for after := int64(0); ; {
		page, err := s.log.Since(ctx, conv, after)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the events of conversation %s: %w", conv, err)
		}
		if len(page.Events) == 0 {
			break
		}
		for _, ev := range page.Events {
			after = ev.Seq
			switch ev.Type {
			case types.asked, types.answered, types.expired, types.reply:
			case EventTurnStarted:
				clear(asked) // their process no longer runs their turn
				continue
			default:
				continue
			}
			var head struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(ev.Data, &head) != nil {
				continue
			}
			if ev.Type == types.asked {
				order = append(order, head.ID)
				asked[head.ID] = ev.Data
			} else {
				delete(asked, head.ID)
			}
		}
	}
	var datas []json.RawMessage
	var left []int64
	for _, id := range order {
		data, ok := asked[id]
		if !ok || seen[id] {
			continue
		}
		delete(asked, id)
		var head struct {
			Expires string `json:"expires"`
		}
		if json.Unmarshal(data, &head) != nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, head.Expires)
		if err != nil || !now.Before(t) {
			continue
		}
		datas = append(datas, data)
		left = append(left, t.Sub(now).Milliseconds())
	}
	return datas, left, nil
}
