package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/result"
)

// ConversationInfo is a conversation as the API shows it: its stored
// record, and what this server is doing with it.
type ConversationInfo struct {
	history.Conversation
	// Turn is the id of the turn this server is running on it, "" when
	// none.
	Turn string `json:"turn,omitempty"`
	// LastEvent is the sequence number of its newest event on this
	// server, 0 when none.
	LastEvent int64 `json:"last_event"`
	// Model and Window are the model this server's turns ask for and its
	// context window in tokens (contract §12), which a request's size is
	// held against.
	Model  string `json:"model"`
	Window int    `json:"window"`
	// Branches are, on GET /v1/conversations/{id} alone, its branches
	// (history.Brancher), oldest first, each with the point where it
	// parts from it; absent when it has none.
	Branches []BranchRef `json:"branches,omitempty"`
	// Cost is, on GET /v1/conversations/{id} alone, what the whole
	// conversation cost: each stored request's usage (answers, summaries,
	// refused answers) priced on its own at the model stored with it or
	// last before it, summed (price.Conversation, as history show and the
	// request list price). Unknown, with why and no usd, when one could
	// not be priced (at_least_usd when part could); absent when the
	// server has no price table (Agent.Pricer).
	Cost *price.JSON `json:"cost,omitempty"`
	// TurnCosts are, with Cost, what each turn cost and each of its
	// requests: what the inspector shows per request and per turn.
	TurnCosts []TurnCost `json:"turn_costs,omitempty"`
}

// TurnCost is what one turn of a conversation cost (price.Turn, as the
// API numbers messages): its requests' costs and their sum.
type TurnCost struct {
	// Prompt is the number of the turn's prompt (from 1, as …/messages
	// numbers it); absent for requests stored before the first prompt.
	Prompt   int           `json:"prompt,omitempty"`
	Requests []RequestCost `json:"requests"`
	Cost     *price.JSON   `json:"cost"`
}

// RequestCost is what one stored request cost: its usage, held by message
// or record Msg (from 1), priced on its own.
type RequestCost struct {
	Msg int `json:"msg"`
	// Kind is "answer", "summary" (a context record's summary request) or
	// "refusal" (a refused answer the guard withheld).
	Kind  string      `json:"kind"`
	Model string      `json:"model,omitempty"`
	Cost  *price.JSON `json:"cost"`
}

// costs sets ci's Cost and TurnCosts from msgs, the conversation's stored
// records, priced with p.
func (ci *ConversationInfo) costs(p price.Pricer, msgs []history.Message) {
	priced := price.Conversation(p, msgs)
	ci.Cost = priced.Cost.JSON()
	ci.TurnCosts = make([]TurnCost, 0, len(priced.Turns))
	for _, tr := range priced.Turns {
		tc := TurnCost{Prompt: tr.Prompt + 1, Requests: make([]RequestCost, 0, len(tr.Requests)), Cost: tr.Cost.JSON()}
		for _, r := range tr.Requests {
			tc.Requests = append(tc.Requests, RequestCost{Msg: r.Msg + 1, Kind: r.Kind, Model: r.Model, Cost: r.Cost.JSON()})
		}
		ci.TurnCosts = append(ci.TurnCosts, tc)
	}
}

func (s *Server) info(c history.Conversation) ConversationInfo {
	ci := ConversationInfo{Conversation: c, Model: s.Agent.Model}
	if w, err := s.Agent.Window(); err == nil {
		ci.Window = w.Context
	}
	s.mu.Lock()
	cv := s.convs[c.ID]
	s.mu.Unlock()
	if cv != nil {
		cv.mu.Lock()
		if t := cv.live(); t != nil {
			ci.Turn = t.id
		}
		cv.mu.Unlock()
	}
	if last, err := s.log.Last(context.Background(), c.ID); err == nil {
		ci.LastEvent = last
	}
	if s.Queue != nil {
		if tid, err := s.Queue.Pending(context.Background(), c.ID); err == nil && tid != "" {
			ci.Turn = tid
		}
	}
	return ci
}

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) {
	cs, err := s.Agent.Store.List(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Conversations []ConversationInfo `json:"conversations"`
	}{s.infos(cs)})
}

// infos is cs as the API shows them, in their order; never nil, so that
// none is an empty list.
func (s *Server) infos(cs []history.Conversation) []ConversationInfo {
	out := make([]ConversationInfo, 0, len(cs))
	for _, c := range cs {
		out = append(out, s.info(c))
	}
	return out
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if err := readJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	id, err := s.Agent.NewConversation(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	c, err := s.Agent.Store.Get(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Location", "/v1/conversations/"+id)
	writeJSON(w, http.StatusCreated, s.info(c))
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request) {
	c, ok := s.found(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	ci := s.info(c)
	brs, err := s.branchRefs(r.Context(), c)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("the branches of conversation %s: %v", c.ID, err))
		return
	}
	ci.Branches = brs
	if s.Agent.Pricer != nil {
		msgs, err := s.Agent.Store.Messages(r.Context(), c.ID)
		if err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("the messages of conversation %s, to price them: %v", c.ID, err))
			return
		}
		ci.costs(s.Agent.Pricer, msgs)
	}
	writeJSON(w, http.StatusOK, ci)
}

// children serves the conversations id's tool calls started (subagents,
// agent--delegate), oldest first, each as the API shows a conversation:
// its parent_call names the call that started it. It reads them through
// history.Children, which every store answers (Postgres too, under
// --worker); an id not in the store is a 404, as everywhere else.
func (s *Server) children(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := s.found(w, r, id); !ok {
		return
	}
	cs, err := history.Children(r.Context(), s.Agent.Store, id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("the children of conversation %s: %v", id, err))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Children []ConversationInfo `json:"children"`
	}{s.infos(cs)})
}

// StoredMessage is one stored record: its number in the conversation
// (1-based) and the record exactly as the store keeps it.
type StoredMessage struct {
	N       int             `json:"n"`
	Message json.RawMessage `json:"message"`
}

// messages serves the records after ?after=N (0: all), each as the store
// encodes it (result.JSON, the one encoding the store writes).
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after := 0
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("after is %q: it must be a message number (a whole number ≥ 0)", v))
			return
		}
		after = n
	}
	if _, ok := s.found(w, r, id); !ok {
		return
	}
	msgs, err := s.Agent.Store.Messages(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := struct {
		Messages []StoredMessage `json:"messages"`
		Total    int             `json:"total"`
	}{Messages: []StoredMessage{}, Total: len(msgs)}
	for i := after; i < len(msgs); i++ {
		raw, err := result.JSON(msgs[i])
		if err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("message %d: %v", i+1, err))
			return
		}
		out.Messages = append(out.Messages, StoredMessage{N: i + 1, Message: raw})
	}
	writeJSON(w, http.StatusOK, out)
}
