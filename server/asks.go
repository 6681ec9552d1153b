package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/myelin-run/myelin/mcp"
)

// DefaultElicitTimeout is how long an elicitation waits for a client's
// answer when Server.ElicitTimeout is 0: long enough for a person to read
// a form and fill it in, short enough that a turn nobody watches does not
// hang on it. The MCP server's own call timeout bounds it too.
const DefaultElicitTimeout = 5 * time.Minute

// elicitationEvent is the data of an elicitation event: what an MCP server
// asks the conversation's user, to be answered with
// POST /v1/conversations/{id}/elicitations/{id}.
type elicitationEvent struct {
	Turn    string `json:"turn,omitempty"`
	ID      string `json:"id"`
	Server  string `json:"server"`
	Message string `json:"message"`
	// Mode is "form" (fill in Fields) or "url" (visit URL, then accept).
	Mode   string      `json:"mode"`
	Fields []formField `json:"fields,omitempty"`
	URL    string      `json:"url,omitempty"`
	// Schema is the form's requested schema as the MCP server sent it.
	Schema json.RawMessage `json:"schema,omitempty"`
	// TimeoutMS is how long it waits for an answer; Expires when it ends.
	TimeoutMS int64  `json:"timeout_ms"`
	Expires   string `json:"expires"`
}

// formField is one field of a form elicitation, as events carry it.
type formField struct {
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type"`
	Enum        []string `json:"enum,omitempty"`
	Default     any      `json:"default,omitempty"`
	Required    bool     `json:"required"`
}

// elicitationEndedEvent is the data of elicitation.answered (Action) and
// elicitation.expired (Reason). The content of an answer is not echoed:
// it goes to the MCP server only.
type elicitationEndedEvent struct {
	Turn   string `json:"turn,omitempty"`
	ID     string `json:"id"`
	Server string `json:"server"`
	Action string `json:"action"` // what the MCP server was sent
	Reason string `json:"reason,omitempty"`
}

// samplingEvent is the data of a sampling event: an MCP server asks the
// conversation's model to complete (its answer goes to that server only,
// never into the conversation).
type samplingEvent struct {
	Turn      string              `json:"turn,omitempty"`
	ID        string              `json:"id"`
	Server    string              `json:"server"`
	Model     string              `json:"model"`
	System    string              `json:"system,omitempty"`
	Messages  []mcp.SampleMessage `json:"messages"`
	MaxTokens int64               `json:"max_tokens"`
}

// samplingFinishedEvent is the data of sampling.finished.
type samplingFinishedEvent struct {
	Turn       string `json:"turn,omitempty"`
	ID         string `json:"id"`
	Server     string `json:"server"`
	Model      string `json:"model"`
	Text       string `json:"text"`
	StopReason string `json:"stop_reason,omitempty"`
	Tokens     int64  `json:"tokens"`
	Error      string `json:"error,omitempty"`
}

// Event types of what MCP servers ask during a turn's calls.
const (
	EventElicitation         = "elicitation"          // elicitationEvent
	EventElicitationAnswered = "elicitation.answered" // elicitationEndedEvent
	EventElicitationExpired  = "elicitation.expired"  // elicitationEndedEvent
	EventSampling            = "sampling"             // samplingEvent
	EventSamplingFinished    = "sampling.finished"    // samplingFinishedEvent
)

// askedBy is the turn whose call an MCP server's request (in ctx: its
// calls in flight, mcp.Calls) belongs to, and the contexts of that
// conversation's calls then in flight. The protocol does not say which
// call a request is for: when calls of several conversations were in
// flight to that server, it refuses to guess.
func askedBy(ctx context.Context) (*turnInfo, []context.Context, error) {
	var first *turnInfo
	var mine []context.Context
	convs := map[string]bool{}
	for _, c := range mcp.Calls(ctx) {
		ti := turnOf(c)
		if ti == nil {
			continue
		}
		if first == nil {
			first = ti
		}
		convs[ti.conv] = true
		if ti.conv == first.conv {
			mine = append(mine, c)
		}
	}
	switch {
	case first == nil:
		return nil, nil, errors.New("it asked outside any call of a conversation, so there is no one to ask")
	case len(convs) > 1:
		names := make([]string, 0, len(convs))
		for c := range convs {
			names = append(names, c)
		}
		sort.Strings(names)
		return nil, nil, fmt.Errorf("calls of %d conversations (%s) were in flight to it, and MCP does not say which one asks", len(names), strings.Join(names, ", "))
	}
	return first, mine, nil
}

// allDone is a channel closed once every one of calls is done, or never
// when stop closes first.
func allDone(calls []context.Context, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for _, c := range calls {
			select {
			case <-c.Done():
			case <-stop:
				return
			}
		}
		close(done)
	}()
	return done
}

// Elicit is the server's mcp.Elicitor: an MCP server's elicitation during
// a turn's call is emitted as an elicitation event on that conversation's
// stream, and waits for a client to answer it
// (POST .../elicitations/{id}), for ElicitTimeout (then it is declined),
// or for the call to end (then it is cancelled); how it ended is emitted
// too. One whose conversation cannot be told is declined, and logged.
func (s *Server) Elicit(ctx context.Context, e *mcp.Elicitation) (mcp.Answer, error) {
	s.init()
	ti, calls, err := askedBy(ctx)
	if err != nil {
		s.logf("MCP server %s asked for input (%q); declined: %v", e.Server, e.Message, err)
		return mcp.Answer{Action: "decline"}, nil
	}
	timeout := s.ElicitTimeout
	if timeout <= 0 {
		timeout = DefaultElicitTimeout
	}
	a := newAsk(kindElicitation, newAskID("elicit_"), ti.conv, ti.turn, timeout, calls...)
	defer s.asks.told(a) // after the event saying how it ended
	a.e = e
	s.asks.add(a)
	from, _ := s.log.Last(context.Background(), a.conv) // a reply through a shared log comes after
	s.emit(a.conv, EventElicitation, eventOf(a, a.expires.Add(-timeout)))
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	stop := make(chan struct{})
	defer close(stop)
	callsDone := allDone(calls, stop)
	if s.Events != nil {
		go s.followReplies(a, from, stop)
	}
	why, action := "", "cancel"
	select {
	case r := <-a.answer:
		s.emit(a.conv, EventElicitationAnswered, elicitationEndedEvent{Turn: a.turn, ID: a.id, Server: e.Server, Action: r.mcp.Action})
		return r.mcp, nil
	case <-timer.C:
		why, action = fmt.Sprintf("no answer within %v (the server's elicitation timeout)", timeout), "decline"
	case <-callsDone:
		why = "the call it was asked during has ended"
	case <-ctx.Done():
		why = "the MCP server withdrew it"
	case <-s.ended:
		why = "the server stopped"
	}
	if r, ok := s.asks.expire(a, action, why); !ok {
		// answered as it expired: the answer stands
		s.emit(a.conv, EventElicitationAnswered, elicitationEndedEvent{Turn: a.turn, ID: a.id, Server: e.Server, Action: r.mcp.Action})
		return r.mcp, nil
	}
	s.emit(a.conv, EventElicitationExpired, elicitationEndedEvent{Turn: a.turn, ID: a.id, Server: e.Server, Action: action, Reason: why})
	return mcp.Answer{Action: action}, nil
}

// eventOf is a's elicitation event as of now: TimeoutMS is what is left.
func eventOf(a *ask, now time.Time) elicitationEvent {
	e := a.e
	ev := elicitationEvent{Turn: a.turn, ID: a.id, Server: e.Server, Message: e.Message, Mode: e.Mode, URL: e.URL, Schema: e.Schema,
		TimeoutMS: a.expires.Sub(now).Milliseconds(), Expires: a.expires.UTC().Format(time.RFC3339Nano)}
	for _, f := range e.Fields {
		ev.Fields = append(ev.Fields, formField{Name: f.Name, Title: f.Title, Description: f.Description, Type: f.Type, Enum: f.Enum, Default: f.Default, Required: f.Required})
	}
	return ev
}

// ElicitationAnswer is the body of POST .../elicitations/{eid}.
type ElicitationAnswer struct {
	// Action is "accept", "decline" or "cancel".
	Action string `json:"action"`
	// Content is the form's values, with accept in form mode only; the
	// fields left out take their defaults.
	Content map[string]any `json:"content,omitempty"`
}

// ElicitationAnswered is the answer to an elicitation answered: what the
// MCP server is sent.
type ElicitationAnswered struct {
	ID      string         `json:"id"`
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

func (s *Server) answerElicitation(w http.ResponseWriter, r *http.Request) {
	id, eid := r.PathValue("id"), r.PathValue("eid")
	var in ElicitationAnswer
	if err := readJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	as := &s.asks
	as.mu.Lock()
	a := as.lookup(kindElicitation, id, eid)
	if a == nil {
		as.mu.Unlock()
		if s.Events != nil {
			s.answerAcross(w, r, id, eid, in) // asked by another process sharing the log, maybe
			return
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("no elicitation %q of conversation %q on this server (it may have ended long ago)", eid, id))
		return
	}
	defer as.mu.Unlock()
	switch a.state {
	case "answered":
		writeError(w, http.StatusConflict, fmt.Sprintf("elicitation %s was answered already (%s)", eid, a.sent))
		return
	case "expired":
		writeError(w, http.StatusConflict, fmt.Sprintf("elicitation %s has ended: %s; the MCP server was sent %q", eid, a.why, a.sent))
		return
	}
	ans, err := checkAnswer(a.e, eid, in)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	as.deliver(a, reply{mcp: ans})
	writeJSON(w, http.StatusOK, ElicitationAnswered{ID: eid, Action: ans.Action, Content: ans.Content})
}

// checkAnswer is the answer in to elicitation e (eid), checked: the
// error says what did not fit.
func checkAnswer(e *mcp.Elicitation, eid string, in ElicitationAnswer) (mcp.Answer, error) {
	ans := mcp.Answer{Action: in.Action}
	switch in.Action {
	case "accept":
		if e.Mode == "url" {
			if in.Content != nil {
				return ans, fmt.Errorf("elicitation %s asks for a visit to a URL, and takes no content: accept once it is done, with no content", eid)
			}
			break
		}
		content, err := e.Check(in.Content)
		if err != nil {
			return ans, fmt.Errorf("elicitation %s: %w", eid, err)
		}
		ans.Content = content
	case "decline", "cancel":
		if in.Content != nil {
			return ans, fmt.Errorf("elicitation %s: %s takes no content (only accept does)", eid, in.Action)
		}
	case "":
		return ans, errors.New(`an answer needs its action: {"action":"accept","content":{...}}, {"action":"decline"} or {"action":"cancel"}`)
	default:
		return ans, fmt.Errorf("action %q: want accept, decline or cancel", in.Action)
	}
	return ans, nil
}

// PendingElicitation is an elicitation waiting for an answer, as
// GET .../elicitations lists it: its event's data.
type PendingElicitation = elicitationEvent

// listElicitations serves the conversation's elicitations waiting for an
// answer, oldest first: this server's, and with a shared event log those
// other processes wait on; for a client that comes after their events.
func (s *Server) listElicitations(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := s.found(w, r, id); !ok {
		return
	}
	out := struct {
		Elicitations []PendingElicitation `json:"elicitations"`
	}{Elicitations: []PendingElicitation{}}
	now := time.Now()
	seen := map[string]bool{}
	for _, a := range s.asks.pending(kindElicitation, id) {
		out.Elicitations = append(out.Elicitations, eventOf(a, now))
		seen[a.id] = true
	}
	if s.Events != nil {
		datas, left, err := s.pendingAcross(r.Context(), kindElicitation, id, seen, now)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		for i, data := range datas {
			var ev elicitationEvent
			if json.Unmarshal(data, &ev) == nil {
				ev.TimeoutMS = left[i]
				out.Elicitations = append(out.Elicitations, ev)
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// Sample is the server's mcp.Sampler: an MCP server's sampling request
// during a turn's call goes to that turn's own provider and model (the
// turn's model when it named one), emitted as a sampling event before
// and sampling.finished after. The budget of the server's config entry is
// package mcp's to keep. One whose conversation cannot be told is
// refused.
func (s *Server) Sample(ctx context.Context, smp *mcp.Sample) (mcp.Completion, error) {
	s.init()
	ti, _, err := askedBy(ctx)
	if err != nil {
		s.logf("MCP server %s asked the model to complete; refused: %v", smp.Server, err)
		return mcp.Completion{}, fmt.Errorf("myelin cannot tell whose model to use: %w", err)
	}
	a := ti.agent
	if a == nil {
		a = s.Agent
	}
	id := newAskID("sample_")
	s.emit(ti.conv, EventSampling, samplingEvent{Turn: ti.turn, ID: id, Server: smp.Server, Model: a.Model, System: smp.System, Messages: smp.Messages, MaxTokens: smp.MaxTokens})
	c, err := mcp.ProviderSampler{Provider: a.Provider, Model: a.Model}.Sample(ctx, smp)
	fin := samplingFinishedEvent{Turn: ti.turn, ID: id, Server: smp.Server, Model: a.Model, Text: c.Text, StopReason: c.StopReason, Tokens: c.Tokens}
	if err != nil {
		fin.Error = err.Error()
	}
	s.emit(ti.conv, EventSamplingFinished, fin)
	return c, err
}

func newAskID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
