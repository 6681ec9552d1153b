package server

import (
	"context"
	"encoding/json"
	"log"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/result"
)

// The types of event a conversation's stream carries, and the data of
// each (one JSON object). Every text in them is the text the model was
// sent or sent back, as stored: never converted here.
const (
	EventTurnStarted       = "turn.started"       // turnStartedEvent
	EventModelDelta        = "model.delta"        // modelDeltaEvent: text or thinking as it streams
	EventToolStarted       = "tool.started"       // toolStartedEvent
	EventToolFinished      = "tool.finished"      // toolFinishedEvent
	EventUsage             = "usage"              // usageEvent: one request's
	EventMessageStored     = "message.stored"     // messageStoredEvent: a message or record stored
	EventNotice            = "notice"             // noticeEvent
	EventWaiting           = "waiting"            // waitingEvent: a request waits for its key's rate limit
	EventContextCleared    = "context.cleared"    // contextEvent
	EventContextSummarised = "context.summarised" // contextEvent
	EventContextWithheld   = "context.withheld"   // contextEvent: the refusal guard withheld a round's results
	EventError             = "error"              // errorEvent
	EventTurnFinished      = "turn.finished"      // turnFinishedEvent
	EventLost              = "events.lost"        // lostEvent: the watcher resumed from further back than the log keeps
)

// lostEvent is the data of events.lost: a watcher resumed from further
// back than the log keeps. Its id is the last event lost, so that a
// watcher that reconnects resumes after it.
type lostEvent struct {
	Lost int64 `json:"lost"`
	// Restarted says the id resumed from is of an earlier server process.
	Restarted bool `json:"restarted,omitempty"`
	// Message says what was lost, why, and where the stored messages are.
	Message string `json:"message"`
}

type turnStartedEvent struct {
	Turn   string `json:"turn"`
	Prompt string `json:"prompt"`
}

type modelDeltaEvent struct {
	Turn string `json:"turn"`
	Kind string `json:"kind"` // "text" or "thinking"
	Text string `json:"text"`
}

type toolStartedEvent struct {
	Turn   string          `json:"turn"`
	CallID string          `json:"call_id"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input,omitempty"`
}

type toolFinishedEvent struct {
	Turn      string  `json:"turn"`
	CallID    string  `json:"call_id"`
	Name      string  `json:"name"`
	ElapsedMS float64 `json:"elapsed_ms"`
	// Chars is the whole result's length in characters, before any cut;
	// Text is what the model was sent (a spilled result's head and notice).
	Chars      int             `json:"chars"`
	Text       string          `json:"text"`
	IsError    bool            `json:"is_error"`
	SpillPath  string          `json:"spill_path,omitempty"`
	Files      []string        `json:"files,omitempty"`
	Images     int             `json:"images,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
	// Repaired is how many ill-formed sequences the conversion replaced
	// with U+FFFD (contract §3).
	Repaired int `json:"repaired,omitempty"`
	// Reply is the head of the tool's own reply as it came (an MCP
	// server's result JSON; result.Output.Reply), ReplyBytes its size.
	Reply      string `json:"reply,omitempty"`
	ReplyBytes int    `json:"reply_bytes,omitempty"`
	// Permission is what the permission gate decided of the call, and by
	// whom (stored with its result); absent without a gate.
	Permission *permission.Record `json:"permission,omitempty"`
}

// Usage is one request's or one turn's tokens.
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cache_read"`
	CacheWrite int `json:"cache_write"`
	// CacheWrite1h is how many of CacheWrite were written with the
	// one-hour cache lifetime (history.Usage); absent when none.
	CacheWrite1h int `json:"cache_write_1h,omitempty"`
}

func usageOf(u history.Usage) Usage {
	return Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, CacheWrite1h: u.CacheWrite1h}
}

type messageStoredEvent struct {
	Turn string `json:"turn"`
	// N is the message's number in the conversation (from 1, as
	// GET .../messages numbers them); Role is its role ("context" for a
	// record).
	N    int    `json:"n"`
	Role string `json:"role"`
}

type usageEvent struct {
	Turn  string `json:"turn"`
	Usage Usage  `json:"usage"`
}

type noticeEvent struct {
	Turn string `json:"turn"`
	// Kind is "notice", "waiting" (for another writer's claim), "retry",
	// or with workers "claim_lost", "handed_back" or "rate_limited"; or
	// "server_stopping"
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// waitingEvent is the data of waiting: a request of the turn is held at
// its key's rate limiter until Until (RFC 3339), for the reason Text
// says; told again when Until moves later (docs/ratelimits.md). A wait
// for another writer's claim, whose end no one knows, is a notice of
// kind waiting instead.
type waitingEvent struct {
	Turn  string    `json:"turn"`
	Until time.Time `json:"until"`
	// Text says until when, what for and why: "waiting until 12:00:05
	// UTC (20.0s) for the rate limit of anthropic: 429 from
	// api.anthropic.com: retry after 20s" (agent.WaitText).
	Text string `json:"text"`
}

type contextEvent struct {
	Turn string        `json:"turn"`
	Text string        `json:"text"`
	Edit *history.Edit `json:"edit,omitempty"`
}

type errorEvent struct {
	Turn    string `json:"turn,omitempty"`
	Message string `json:"message"`
}

type turnFinishedEvent struct {
	Turn   string `json:"turn"`
	Reason string `json:"reason"` // the agent's, or "error" or "cancelled"
	Rounds int    `json:"rounds"`
	Usage  Usage  `json:"usage"`
	// Cost is the turn's cost: each of its requests' usage priced on its
	// own under the turn's model, summed (price.Sum: unknown, with why,
	// when one could not be priced — never a usd of 0). Absent when the
	// server has no price table (Agent.Pricer).
	Cost  *price.JSON `json:"cost,omitempty"`
	Text  string      `json:"text,omitempty"`
	Error string      `json:"error,omitempty"`
}

// emit appends an event to conversation conv's log; an event that does
// not encode, or that the log refuses, is logged, never sent half-made.
// An event over MaxEventBytes is bounded first (bounded): a delta split
// into deltas, any other with its longest fields cut.
func (s *Server) emit(conv, typ string, v any) {
	datas, err := bounded(typ, v)
	for _, data := range datas {
		if err != nil {
			break
		}
		err = s.log.Append(context.Background(), conv, typ, data)
	}
	if err != nil {
		s.logf("server: a %s event of conversation %s: %v", typ, conv, err)
	}
}

// emitAgent appends the API's event for one of the agent's.
func (s *Server) emitAgent(c string, turn string, e agent.Event) {
	switch e.Kind {
	case agent.TextDelta:
		s.emit(c, EventModelDelta, modelDeltaEvent{Turn: turn, Kind: "text", Text: e.Text})
	case agent.Thinking:
		s.emit(c, EventModelDelta, modelDeltaEvent{Turn: turn, Kind: "thinking", Text: e.Text})
	case agent.ToolCall:
		s.emit(c, EventToolStarted, toolStartedEvent{Turn: turn, CallID: e.Call.CallID, Name: e.Call.Name, Input: e.Call.Input})
	case agent.ToolResult:
		fin := finished(turn, e.Call, e.Output, e.Elapsed.Seconds()*1000)
		fin.Permission = e.Permission
		s.emit(c, EventToolFinished, fin)
	case agent.Usage:
		s.emit(c, EventUsage, usageEvent{Turn: turn, Usage: usageOf(e.Usage)})
	case agent.Waiting:
		if e.Until.IsZero() { // another writer's claim: no one knows until when
			s.emit(c, EventNotice, noticeEvent{Turn: turn, Kind: string(e.Kind), Text: e.Text})
			break
		}
		s.emit(c, EventWaiting, waitingEvent{Turn: turn, Until: e.Until.UTC(), Text: e.Text})
	case agent.Notice:
		s.emit(c, EventNotice, noticeEvent{Turn: turn, Kind: string(e.Kind), Text: e.Text})
	case agent.ContextEdit:
		typ := EventContextCleared
		switch {
		case e.Edit != nil && e.Edit.Refusal != nil:
			typ = EventContextWithheld
		case e.Edit != nil && e.Edit.Summary != nil:
			typ = EventContextSummarised
		}
		s.emit(c, typ, contextEvent{Turn: turn, Text: e.Text, Edit: e.Edit})
	default:
		s.emit(c, EventNotice, noticeEvent{Turn: turn, Kind: string(e.Kind), Text: e.Text})
	}
}

func finished(turn string, call history.Part, o result.Output, ms float64) toolFinishedEvent {
	return toolFinishedEvent{Turn: turn, CallID: call.CallID, Name: call.Name, ElapsedMS: ms,
		Chars: o.Chars, Text: o.Text, IsError: o.IsError, SpillPath: o.SpillPath, Files: o.Files,
		Images: len(o.Images), Structured: o.Structured, Repaired: o.Repaired,
		Reply: o.Reply, ReplyBytes: o.ReplySize}
}

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
		return
	}
	log.Printf(format, args...)
}
