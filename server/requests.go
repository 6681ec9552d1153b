package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
)

// RequestInfo is a request sent for a conversation, without its body: how
// big it was, what it produced and what it cost. It numbers as the rest of
// the API does, from 1: N among the conversation's requests, Msg among its
// messages (GET …/messages).
type RequestInfo struct {
	// N is its number among the conversation's requests, from 1.
	N int `json:"n"`
	// Msg is the number GET …/messages gives the stored answer it
	// produced (from 1); 0, and left out of the JSON, when it produced
	// none (refused as too long, or by the refusal guard). The store keeps
	// the answer's place from 0 (history.SentRequest.Msg, -1 for none):
	// this is that place plus one, so stores written before read the same.
	Msg int `json:"msg,omitempty"`
	// Wire names the wire that built it ("anthropic", "openai", ...).
	Wire string `json:"wire"`
	// Size and Bytes are the body's size in bytes (Size as the store
	// gives it, Bytes as served); the body itself is at Body.
	Size  int    `json:"size"`
	Bytes int    `json:"bytes"`
	Body  string `json:"body"`
	// Usage is what the provider said it cost, nil when it said nothing.
	Usage *history.Usage `json:"usage,omitempty"`
	// Cost is what it cost in US dollars: the usage of the answer it
	// produced priced under the model stored with that answer or last
	// before it (price.Conversation). Absent when it produced no answer,
	// the answer has no usage, or the server has no price table
	// (Agent.Pricer); unknown, with why and no usd, when the table has no
	// price for it.
	Cost *price.JSON `json:"cost,omitempty"`
	// Error is why it produced no answer, "" when it did.
	Error string `json:"error,omitempty"`
	// Time is when it was sent.
	Time time.Time `json:"time"`
}

// requestLog is the store's Requests, or an error answer saying that the
// store keeps none.
func (s *Server) requestLog(w http.ResponseWriter, r *http.Request, id string) (history.Requests, bool) {
	if _, ok := s.found(w, r, id); !ok {
		return nil, false
	}
	log, ok := s.Agent.Store.(history.Requests)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("this server's store (%T) does not keep the requests sent", s.Agent.Store))
		return nil, false
	}
	return log, true
}

// requestInfo is what the API serves of a kept request: its answer's
// place (from 0, -1 for none) becomes the answer's number (from 1, 0 for
// none), the one numbering the API uses.
func requestInfo(id string, sr history.SentRequest) RequestInfo {
	return RequestInfo{
		N: sr.N, Msg: max(sr.Msg+1, 0), Wire: sr.Wire,
		Size: sr.Size, Bytes: max(len(sr.Body), sr.Size), Body: fmt.Sprintf("/v1/conversations/%s/requests/%d/body", id, sr.N),
		Usage: sr.Usage, Error: sr.Error, Time: sr.Time,
	}
}

// requestNumber is the {n} of the path, or an error answer.
func requestNumber(w http.ResponseWriter, v, name string) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s is %q: it must be a request number (1 or more)", name, v))
		return 0, false
	}
	return n, true
}

// loadRequest reads request n, writing the error answer when it cannot.
func loadRequest(w http.ResponseWriter, r *http.Request, log history.Requests, id string, n int) (history.SentRequest, bool) {
	sr, err := log.Request(r.Context(), id, n)
	if errors.Is(err, history.ErrNotFound) {
		writeError(w, http.StatusNotFound, err.Error())
		return sr, false
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return sr, false
	}
	return sr, true
}

// listRequests serves every request's info, oldest first.
func (s *Server) listRequests(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	log, ok := s.requestLog(w, r, id)
	if !ok {
		return
	}
	list, err := log.RequestList(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := struct {
		Requests []RequestInfo `json:"requests"`
	}{Requests: make([]RequestInfo, 0, len(list))}
	costs := s.answerCosts(r.Context(), id, list...)
	for _, sr := range list {
		out.Requests = append(out.Requests, costed(requestInfo(id, sr), sr, costs))
	}
	writeJSON(w, http.StatusOK, out)
}

// answerCosts is the cost of each stored answer with a usage, by its
// place (from 0), when the server has a price table and one of list
// produced an answer with a usage; nil else (the messages are read only
// then). A conversation whose messages cannot be read has no costs: the
// request list is served without them rather than not at all.
func (s *Server) answerCosts(ctx context.Context, id string, list ...history.SentRequest) map[int]price.Cost {
	if s.Agent.Pricer == nil || !slices.ContainsFunc(list, func(sr history.SentRequest) bool { return sr.Usage != nil && sr.Msg >= 0 }) {
		return nil
	}
	msgs, err := s.Agent.Store.Messages(ctx, id)
	if err != nil {
		s.logf("server: the messages of conversation %s, to price its requests: %v", id, err)
		return nil
	}
	costs := map[int]price.Cost{}
	for _, tr := range price.Conversation(s.Agent.Pricer, msgs).Turns {
		for _, rq := range tr.Requests {
			if rq.Kind == "answer" {
				costs[rq.Msg] = rq.Cost
			}
		}
	}
	return costs
}

// costed is info with the cost of the answer sr produced, when costs has
// it.
func costed(info RequestInfo, sr history.SentRequest, costs map[int]price.Cost) RequestInfo {
	if c, ok := costs[sr.Msg]; ok && sr.Usage != nil && sr.Msg >= 0 {
		info.Cost = c.JSON()
	}
	return info
}

// pathRequest is the request the path's {id} and {n} name, or false with
// the error answered.
func (s *Server) pathRequest(w http.ResponseWriter, r *http.Request) (string, history.SentRequest, bool) {
	id := r.PathValue("id")
	n, ok := requestNumber(w, r.PathValue("n"), "the request number")
	if !ok {
		return id, history.SentRequest{}, false
	}
	log, ok := s.requestLog(w, r, id)
	if !ok {
		return id, history.SentRequest{}, false
	}
	sr, ok := loadRequest(w, r, log, id, n)
	return id, sr, ok
}

func (s *Server) getRequest(w http.ResponseWriter, r *http.Request) {
	if id, sr, ok := s.pathRequest(w, r); ok {
		writeJSON(w, http.StatusOK, costed(requestInfo(id, sr), sr, s.answerCosts(r.Context(), id, sr)))
	}
}

// requestBody serves the body exactly as it was sent, byte for byte.
func (s *Server) requestBody(w http.ResponseWriter, r *http.Request) {
	_, sr, ok := s.pathRequest(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(sr.Body)))
	_, _ = w.Write(sr.Body)
}

// requestDiff serves where request n first differs from request M
// (?against=M; default the one before n), and why the provider's cached
// prefix ends there.
func (s *Server) requestDiff(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, ok := requestNumber(w, r.PathValue("n"), "the request number")
	if !ok {
		return
	}
	m := n - 1
	if v := r.URL.Query().Get("against"); v != "" {
		if m, ok = requestNumber(w, v, "against"); !ok {
			return
		}
	}
	if m < 1 {
		writeError(w, http.StatusBadRequest, "request 1 has no request before it: give ?against=M")
		return
	}
	log, ok := s.requestLog(w, r, id)
	if !ok {
		return
	}
	a, ok := loadRequest(w, r, log, id, m)
	if !ok {
		return
	}
	b, ok := loadRequest(w, r, log, id, n)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, diffRequests(a, b))
}
