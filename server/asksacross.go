package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/myelin-run/myelin/mcp"
)

// With a shared event log (Server.Events: serve --worker), the process
// that waits on an elicitation is the one whose worker runs the turn, and
// a client's answer may reach any process. The answer then goes through
// the log: the process it reached checks it against the elicitation's
// event and appends it as an elicitation.reply event, which the waiting
// process follows (followReplies) and takes the first of.

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
	after := from
	for {
		page, err := s.log.Since(ctx, a.conv, after)
		if err != nil {
			if ctx.Err() == nil {
				s.logf("server: following the replies to elicitation %s: %v", a.id, err)
			}
			return
		}
		for _, ev := range page.Events {
			after = ev.Seq
			if ev.Type != EventElicitationReply {
				continue
			}
			var r elicitationReply
			if json.Unmarshal(ev.Data, &r) != nil || r.ID != a.id {
				continue
			}
			as := &s.asks
			as.mu.Lock()
			if a.state == "pending" {
				as.deliver(a, mcp.Answer{Action: r.Action, Content: r.Content})
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

// answerAcross answers an elicitation this process is not waiting on,
// from the conversation's shared events: 404 when no elicitation eid is
// there, 409 when it has ended, was answered or has expired, 400 when the
// answer does not fit; else the reply is appended for the process
// waiting on it.
func (s *Server) answerAcross(w http.ResponseWriter, r *http.Request, conv, eid string, in ElicitationAnswer) {
	var asked *elicitationEvent
	ended := ""
	for after := int64(0); ; {
		page, err := s.log.Since(r.Context(), conv, after)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "reading the conversation's events: "+err.Error())
			return
		}
		if len(page.Events) == 0 {
			break
		}
		for _, ev := range page.Events {
			after = ev.Seq
			var head struct {
				ID     string `json:"id"`
				Action string `json:"action"`
				Reason string `json:"reason"`
			}
			switch ev.Type {
			case EventElicitation, EventElicitationAnswered, EventElicitationExpired, EventElicitationReply:
				if json.Unmarshal(ev.Data, &head) != nil || head.ID != eid {
					continue
				}
			default:
				continue
			}
			switch ev.Type {
			case EventElicitation:
				asked = &elicitationEvent{}
				var cut struct {
					Cut []string `json:"cut"`
				}
				if err := json.Unmarshal(ev.Data, asked); err != nil {
					writeError(w, http.StatusInternalServerError, fmt.Sprintf("elicitation %s's event does not read: %v", eid, err))
					return
				}
				if json.Unmarshal(ev.Data, &cut) == nil && len(cut.Cut) > 0 {
					// its fields were cut to MaxEventBytes: an answer
					// cannot be checked against them here
					writeError(w, http.StatusConflict, fmt.Sprintf("elicitation %s's event was cut to %d bytes (%v), so this process cannot check an answer: send it to the server process whose turn asks", eid, MaxEventBytes, cut.Cut))
					return
				}
			case EventElicitationExpired:
				ended = fmt.Sprintf("elicitation %s has ended: %s; the MCP server was sent %q", eid, head.Reason, head.Action)
			default:
				ended = fmt.Sprintf("elicitation %s was answered already (%s)", eid, head.Action)
			}
		}
	}
	if asked == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no elicitation %q of conversation %q (it may have ended long ago)", eid, conv))
		return
	}
	if ended == "" {
		if t, err := time.Parse(time.RFC3339Nano, asked.Expires); err == nil && time.Now().After(t) {
			ended = fmt.Sprintf("elicitation %s has ended: it expired at %s", eid, asked.Expires)
		}
	}
	if ended != "" {
		writeError(w, http.StatusConflict, ended)
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
	data, err := json.Marshal(elicitationReply{ID: eid, Action: ans.Action, Content: ans.Content})
	if err == nil && len(data) > MaxEventBytes {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the answer is %d bytes as an event, over the %d an event carries to the process waiting on it", len(data), MaxEventBytes))
		return
	}
	if err == nil {
		err = s.log.Append(r.Context(), conv, EventElicitationReply, data)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "passing the answer on: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ElicitationAnswered{ID: eid, Action: ans.Action, Content: ans.Content})
}
