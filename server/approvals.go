package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/tool"
)

// DefaultApprovalTimeout is how long a tool call's approval waits for a
// client's answer when Server.ApprovalTimeout is 0, before the call is
// denied: long enough for a person watching to read the call and decide,
// short enough that a turn nobody watches does not hold its conversation
// long on each call it asks about. It is the elicitation's default too.
const DefaultApprovalTimeout = 5 * time.Minute

// maxDenyReason bounds the reason a person gives with a deny, in bytes:
// it is sent to the model with the denial.
const maxDenyReason = 4096

// answeredBy is who answered an approval over the API, for the record
// (approval.Answer.By).
const answeredBy = "api"

// Event types of a tool call's approval.
const (
	EventApproval         = "approval"          // approvalEvent: a call waits for a person's decision
	EventApprovalAnswered = "approval.answered" // approvalEndedEvent
	EventApprovalExpired  = "approval.expired"  // approvalEndedEvent: denied, no answer came (or the call ended)
	EventApprovalReply    = "approval.reply"    // approvalReply: with workers, an answer posted to another process
)

// approvalEvent is the data of an approval event: a tool call of the
// turn waits for a person's decision, to be given with
// POST /v1/conversations/{id}/approvals/{approval_id}.
type approvalEvent struct {
	Turn string `json:"turn,omitempty"`
	ID   string `json:"id"`
	// CallID is the call's id, as tool.started names it.
	CallID string `json:"call_id,omitempty"`
	// Tool is the tool the call names; Input its arguments.
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input,omitempty"`
	// Command is, for shell--run, the command line; Part the command of
	// it that is asked about ("" when the line as a whole is).
	Command string `json:"command,omitempty"`
	Part    string `json:"part,omitempty"`
	// Reason is why it is asked: the policy's verdict, in words.
	Reason string `json:"reason,omitempty"`
	// Rule is the rule allow_session adds for the conversation; empty
	// when no rule covers the call beyond itself (allow_session is then
	// not offered).
	Rule string `json:"rule,omitempty"`
	// Decisions are the answers it takes.
	Decisions []string `json:"decisions"`
	// TimeoutMS is how long it waits for an answer (then the call is
	// denied); Expires when it ends.
	TimeoutMS int64  `json:"timeout_ms"`
	Expires   string `json:"expires"`
}

// approvalEndedEvent is the data of approval.answered and
// approval.expired: the decision, and why.
type approvalEndedEvent struct {
	Turn   string `json:"turn,omitempty"`
	ID     string `json:"id"`
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool"`
	// Decision is allow_once, allow_session or deny (an expired one is
	// always denied).
	Decision string `json:"decision"`
	// Reason is the person's reason for a deny (sent to the model), or
	// why it expired.
	Reason string `json:"reason,omitempty"`
	// Rule is, for allow_session, the rule the conversation now allows.
	Rule string `json:"rule,omitempty"`
}

// approvalReply is the data of approval.reply.
type approvalReply struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// ApprovalAnswer is the body of POST .../approvals/{approval_id}.
type ApprovalAnswer struct {
	// Decision is "allow_once", "allow_session" or "deny".
	Decision string `json:"decision"`
	// Reason is why it is denied, sent to the model; with deny only.
	Reason string `json:"reason,omitempty"`
}

// ApprovalAnswered is the answer to an approval answered: the decision
// the call waiting on it gets.
type ApprovalAnswered struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// Rule is, for allow_session, the rule the conversation now allows.
	Rule string `json:"rule,omitempty"`
}

// PendingApproval is an approval waiting for an answer, as
// GET .../approvals lists it: its event's data, TimeoutMS what is left.
type PendingApproval = approvalEvent

// Ask is the server's approval.Asker: a turn's tool call that the policy
// asks about is emitted as an approval event on its conversation's
// stream, and waits for a client's decision
// (POST .../approvals/{approval_id}), for ApprovalTimeout (then it is
// denied with approval.ErrExpired), or for the call's context to end
// (the turn cancelled: denied with the context's cause); how it ended is
// emitted too. A call that is no conversation's (a direct call over the
// API) has no one to ask: approval.ErrNoOne. With a shared event log, an
// allow_session answered for the conversation on any process holds here
// too (sessionAllowed).
func (s *Server) Ask(ctx context.Context, r approval.Request) (approval.Answer, error) {
	s.init()
	ti := turnOf(ctx)
	if ti == nil {
		return approval.Answer{}, fmt.Errorf("%w: the call of %s is no conversation's, so no client of the API can be asked", approval.ErrNoOne, r.Tool)
	}
	if ans, ok := s.sessionAllowed(ctx, ti.conv, r.Rule); ok {
		return ans, nil
	}
	timeout := s.ApprovalTimeout
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	a := newAsk(kindApproval, s.approvalID(r.ID), ti.conv, ti.turn, timeout, ctx)
	defer s.asks.told(a) // after the event saying how it ended
	// the call of the turn's round that asks: the one running the script
	// or subagent whose call this is, else the call itself
	a.req, a.call = r, tool.CallID(ctx)
	if a.call == "" {
		a.call = r.CallID
	}
	s.asks.add(a)
	from, _ := s.log.Last(context.Background(), a.conv) // a reply through a shared log comes after
	s.emit(a.conv, EventApproval, approvalEventOf(a, a.expires.Add(-timeout)))
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	stop := make(chan struct{})
	defer close(stop)
	if s.Events != nil {
		go s.followReplies(a, from, stop)
	}
	var why string
	var err error
	select {
	case rp := <-a.answer:
		return s.approved(a, rp.approval), nil
	case <-timer.C:
		why, err = fmt.Sprintf("no answer within %v (the server's approval timeout, --approval-timeout)", timeout), approval.ErrExpired
	case <-ctx.Done():
		cause := context.Cause(ctx)
		why = "the call ended before an answer came: " + cause.Error()
		if errors.Is(cause, errCancelled) || errors.Is(cause, errClosing) {
			why = "the turn ended before an answer came: " + cause.Error()
		}
		err = ctx.Err() // context.Canceled or DeadlineExceeded, as a Gate returns it
		if cause != err {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
	case <-s.ended:
		why, err = "the server stopped before an answer came", approval.ErrNoOne
	}
	if rp, ok := s.asks.expire(a, string(approval.Deny), why); !ok {
		return s.approved(a, rp.approval), nil // answered as it expired: the answer stands
	}
	s.emit(a.conv, EventApprovalExpired, approvalEndedEvent{Turn: a.turn, ID: a.id, CallID: a.call, Tool: a.req.Tool, Decision: string(approval.Deny), Reason: why})
	return approval.Answer{Choice: approval.Deny, Reason: why}, fmt.Errorf("approval %s of the call of %s: %s: %w", a.id, a.req.Tool, why, err)
}

// approved emits approval.answered for a, answered ans, and returns ans.
func (s *Server) approved(a *ask, ans approval.Answer) approval.Answer {
	ev := approvalEndedEvent{Turn: a.turn, ID: a.id, CallID: a.call, Tool: a.req.Tool, Decision: string(ans.Choice), Reason: ans.Reason}
	if ans.Choice == approval.AllowSession {
		ev.Rule = a.req.Rule
	}
	s.emit(a.conv, EventApprovalAnswered, ev)
	return ans
}

// approvalID is the id of a new approval: the request's own when it has
// one this server does not know, else a new one.
func (s *Server) approvalID(asked string) string {
	if asked != "" {
		s.asks.mu.Lock()
		_, known := s.asks.byID[asked]
		s.asks.mu.Unlock()
		if !known {
			return asked
		}
	}
	return newAskID("approval_")
}

// decisionsFor are the answers an approval of a call takes: allow_session
// only when a rule covers the call beyond itself.
func decisionsFor(rule string) []string {
	if rule == "" {
		return []string{string(approval.AllowOnce), string(approval.Deny)}
	}
	return []string{string(approval.AllowOnce), string(approval.AllowSession), string(approval.Deny)}
}

// approvalEventOf is a's approval event as of now: TimeoutMS is what is
// left.
func approvalEventOf(a *ask, now time.Time) approvalEvent {
	r := a.req
	return approvalEvent{Turn: a.turn, ID: a.id, CallID: a.call, Tool: r.Tool, Input: r.Input, Command: r.Command, Part: r.Part,
		Reason: r.Reason, Rule: r.Rule, Decisions: decisionsFor(r.Rule),
		TimeoutMS: a.expires.Sub(now).Milliseconds(), Expires: a.expires.UTC().Format(time.RFC3339Nano)}
}

// checkDecision is the answer in to approval id, whose rule is rule ("":
// it can be allowed once only), checked: the error says what was wrong
// and how to answer.
func checkDecision(id, rule string, in ApprovalAnswer) (approval.Answer, error) {
	ans := approval.Answer{Choice: approval.Choice(in.Decision), Reason: in.Reason, By: answeredBy}
	switch ans.Choice {
	case approval.AllowOnce, approval.Deny:
	case approval.AllowSession:
		if rule == "" {
			return ans, fmt.Errorf("approval %s can be allowed once only (allow_once): no rule covers this call beyond itself, so allow_session has none to add", id)
		}
	case approval.AllowAlways:
		return ans, fmt.Errorf(`approval %s: allow_always is the terminal's answer (it writes the user's rules file); over the API, answer allow_session (it holds for this conversation), and add the rule to the server's own rules to allow it always`, id)
	case "":
		return ans, errors.New(`an answer needs its decision: {"decision":"allow_once"}, {"decision":"allow_session"} or {"decision":"deny","reason":"…"}`)
	default:
		return ans, fmt.Errorf("decision %q: want allow_once, allow_session or deny", in.Decision)
	}
	if in.Reason != "" && ans.Choice != approval.Deny {
		return ans, fmt.Errorf("approval %s: a reason goes with deny only (it is sent to the model with the denial); %s takes none", id, in.Decision)
	}
	if len(in.Reason) > maxDenyReason {
		return ans, fmt.Errorf("approval %s: the reason is %d bytes, over the %d a deny's reason may have", id, len(in.Reason), maxDenyReason)
	}
	return ans, nil
}

// endedApproval says how approval a ended, "" while it is pending; as.mu
// is held.
func endedApproval(a *ask) string {
	switch a.state {
	case "answered":
		return fmt.Sprintf("approval %s was answered already (%s)", a.id, a.sent)
	case "expired":
		return fmt.Sprintf("approval %s has ended: %s; the call was denied", a.id, a.why)
	}
	return ""
}

func (s *Server) answerApproval(w http.ResponseWriter, r *http.Request) {
	id, aid := r.PathValue("id"), r.PathValue("approval_id")
	var in ApprovalAnswer
	if err := readJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	as := &s.asks
	as.mu.Lock()
	a := as.lookup(kindApproval, id, aid)
	if a == nil {
		as.mu.Unlock()
		if s.Events != nil {
			s.answerApprovalAcross(w, r, id, aid, in) // asked by another process sharing the log, maybe
			return
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("no approval %q of conversation %q on this server (it may have ended long ago)", aid, id))
		return
	}
	defer as.mu.Unlock()
	if ended := endedApproval(a); ended != "" {
		writeError(w, http.StatusConflict, ended)
		return
	}
	ans, err := checkDecision(aid, a.req.Rule, in)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	as.deliver(a, reply{approval: ans})
	out := ApprovalAnswered{ID: aid, Decision: in.Decision, Reason: in.Reason}
	if ans.Choice == approval.AllowSession {
		out.Rule = a.req.Rule
	}
	writeJSON(w, http.StatusOK, out)
}

// answerApprovalAcross answers an approval this process is not waiting
// on, from the conversation's shared events: 404 when no approval aid is
// there, 409 when it has ended, 400 when the answer does not fit; else
// the reply is appended for the process waiting on it.
func (s *Server) answerApprovalAcross(w http.ResponseWriter, r *http.Request, conv, aid string, in ApprovalAnswer) {
	found, err := s.findAcross(r.Context(), kindApproval, conv, aid)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if found.asked == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no approval %q of conversation %q (it may have ended long ago)", aid, conv))
		return
	}
	var asked approvalEvent
	if err := json.Unmarshal(found.asked, &asked); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("approval %s's event does not read: %v", aid, err))
		return
	}
	ended := ""
	switch found.endedBy {
	case EventApprovalExpired:
		ended = fmt.Sprintf("approval %s has ended: %s; the call was denied", aid, found.reason)
	case EventApprovalAnswered, EventApprovalReply:
		ended = fmt.Sprintf("approval %s was answered already (%s)", aid, found.decision)
	case EventTurnStarted:
		ended = fmt.Sprintf("approval %s has ended: a turn of the conversation started after it, so the process that asked it no longer runs its turn (it stopped or handed the turn on); its call did not run", aid)
	default:
		if at := expiredAt(asked.Expires); at != "" {
			ended = fmt.Sprintf("approval %s has ended: %s; the call was denied", aid, at)
		}
	}
	if ended != "" {
		writeError(w, http.StatusConflict, ended)
		return
	}
	ans, err := checkDecision(aid, asked.Rule, in)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.passOn(w, r, conv, EventApprovalReply, approvalReply{ID: aid, Decision: in.Decision, Reason: in.Reason}) {
		return
	}
	out := ApprovalAnswered{ID: aid, Decision: in.Decision, Reason: in.Reason}
	if ans.Choice == approval.AllowSession {
		out.Rule = asked.Rule
	}
	writeJSON(w, http.StatusOK, out)
}

// listApprovals serves the conversation's approvals waiting for an
// answer, oldest first: this server's, and with a shared event log those
// other processes wait on.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := s.found(w, r, id); !ok {
		return
	}
	out := struct {
		Approvals []PendingApproval `json:"approvals"`
	}{Approvals: []PendingApproval{}}
	now := time.Now()
	seen := map[string]bool{}
	for _, a := range s.asks.pending(kindApproval, id) {
		out.Approvals = append(out.Approvals, approvalEventOf(a, now))
		seen[a.id] = true
	}
	if s.Events != nil {
		datas, left, err := s.pendingAcross(r.Context(), kindApproval, id, seen, now)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		for i, data := range datas {
			var ev approvalEvent
			if json.Unmarshal(data, &ev) == nil {
				ev.TimeoutMS = left[i]
				out.Approvals = append(out.Approvals, ev)
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// sessionAllowed is, with a shared event log, the answer allow_session
// when a person answered allow_session in conversation conv, on any
// process, for every rule of rule (approval.Gate joins the rules of a
// compound command with "; ", and remembers each): the gate of the
// process running this turn may not have seen those answers (they were
// given to another worker's). Without a shared log, or for a call no
// rule covers, it is false: the gate itself keeps what this process was
// answered.
func (s *Server) sessionAllowed(ctx context.Context, conv, rule string) (approval.Answer, bool) {
	if s.Events == nil || rule == "" {
		return approval.Answer{}, false
	}
	granted := map[string]bool{}
	for after := int64(0); ; {
		page, err := s.log.Since(ctx, conv, after)
		if err != nil || len(page.Events) == 0 {
			break
		}
		for _, ev := range page.Events {
			after = ev.Seq
			if ev.Type != EventApprovalAnswered {
				continue
			}
			var ended approvalEndedEvent
			if json.Unmarshal(ev.Data, &ended) == nil && ended.Decision == string(approval.AllowSession) {
				for _, r := range strings.Split(ended.Rule, ruleSep) {
					granted[r] = true
				}
			}
		}
	}
	for _, r := range strings.Split(rule, ruleSep) {
		if !granted[r] {
			return approval.Answer{}, false
		}
	}
	return approval.Answer{Choice: approval.AllowSession, By: approval.BySession}, true
}

// ruleSep is what approval.Gate joins the rules of one request with.
const ruleSep = "; "
