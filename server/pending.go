package server

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/mcp"
)

// What a turn's call asks the conversation's clients — an MCP server's
// elicitation (asks.go), a tool call's approval (approvals.go) — goes
// through one mechanism: a pending ask in the server's table, an event
// on the conversation's stream, one answer accepted over the API (the
// ask's own endpoint), or through the shared event log from another
// process (asksacross.go), and an event saying how it ended. An answer
// that comes after the end is told so (409) for as long as the server
// remembers the ask.

// endedKept is how many ended asks the server remembers, so that a late
// answer is told it came too late (409) rather than that there was no
// such ask (404).
const endedKept = 1000

// The kinds of ask.
const (
	kindElicitation = "elicitation"
	kindApproval    = "approval"
)

// asks are a server's asks: those waiting for an answer, and the last
// endedKept that ended.
type asks struct {
	mu    sync.Mutex
	byID  map[string]*ask
	ended []string // ids of ended ones, oldest first
}

// ask is one question put to a conversation's clients.
type ask struct {
	id, conv, turn string
	kind           string           // kindElicitation or kindApproval
	e              *mcp.Elicitation // an elicitation's question
	req            approval.Request // an approval's call
	call           string           // an approval's call id
	expires        time.Time
	answer         chan reply // gets the one answer accepted
	state          string     // "pending", "answered" or "expired"
	sent           string     // once ended: the action (an elicitation's) or the decision (an approval's)
	why            string     // why it expired
	// calls are the contexts of the calls it was asked during (an
	// approval's one, an elicitation's every call in flight to its MCP
	// server): once all have ended the ask is ending. over is closed
	// once its end event is emitted (told), so that the turn's
	// turn.finished comes after it (toldBefore).
	calls []context.Context
	over  chan struct{}
}

// reply is the answer to an ask: an elicitation's (mcp) or an
// approval's.
type reply struct {
	mcp      mcp.Answer
	approval approval.Answer
}

// newAsk is a pending ask of conversation conv's turn, of kind, that
// expires after timeout, asked during calls (their contexts). Its asker
// calls asks.told once it emitted how it ended.
func newAsk(kind, id, conv, turn string, timeout time.Duration, calls ...context.Context) *ask {
	return &ask{id: id, conv: conv, turn: turn, kind: kind, expires: time.Now().Add(timeout),
		answer: make(chan reply, 1), state: "pending", calls: calls, over: make(chan struct{})}
}

// callsEnded reports whether every call a was asked during has ended
// (its context's Err, read at once: no goroutine between the cancel and
// this, as a channel closed once all are done would put); false when a
// has none. as.mu is held.
func (a *ask) callsEnded() bool {
	for _, c := range a.calls {
		if c.Err() == nil {
			return false
		}
	}
	return len(a.calls) > 0
}

// told marks a's end event emitted, and lets go of the contexts of its
// calls (an ended ask is remembered for endedKept more: its calls' value
// chains — the turn, the round's scope — are not).
func (as *asks) told(a *ask) {
	as.mu.Lock()
	defer as.mu.Unlock()
	a.calls = nil
	close(a.over)
}

// tellWait bounds how long a turn's end waits for the end events of its
// asks whose calls ended: the askers emit them as soon as they see their
// call's context done, so only a process stalled past it waits it out.
var tellWait = 5 * time.Second

// toldBefore returns once every ask of conversation conv's turn whose
// call has ended has emitted how it ended (approval.expired,
// approval.answered, elicitation.expired…), or after tellWait: a turn's
// turn.finished comes after them, so that a client that stops reading at
// turn.finished never misses one. (A cancelled turn's dispatcher gives up
// on a call that waits for an answer without waiting for it: the call's
// ask ends on its own goroutine, maybe after the turn.) An ask whose call
// goes on past the turn is not waited for.
func (as *asks) toldBefore(conv, turn string) {
	as.mu.Lock()
	var ending []*ask
	for _, a := range as.byID {
		if a.conv != conv || a.turn != turn || isDone(a.over) || !a.callsEnded() {
			continue
		}
		ending = append(ending, a)
	}
	as.mu.Unlock()
	if len(ending) == 0 {
		return
	}
	limit := time.NewTimer(tellWait)
	defer limit.Stop()
	for _, a := range ending {
		select {
		case <-a.over:
		case <-limit.C:
			return
		}
	}
}

// add records a pending ask.
func (as *asks) add(a *ask) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.byID == nil {
		as.byID = map[string]*ask{}
	}
	as.byID[a.id] = a
}

// lookup is the ask id of conversation conv and kind, nil when the server
// does not know it; as.mu is held.
func (as *asks) lookup(kind, conv, id string) *ask {
	a := as.byID[id]
	if a == nil || a.conv != conv || a.kind != kind {
		return nil
	}
	return a
}

// end marks a ended, how (state), with what was sent and why it expired,
// and forgets the oldest ended ones past endedKept; as.mu is held.
func (as *asks) end(a *ask, state, sent, why string) {
	a.state, a.sent, a.why = state, sent, why
	as.ended = append(as.ended, a.id)
	if over := len(as.ended) - endedKept; over > 0 {
		for _, id := range as.ended[:over] {
			delete(as.byID, id)
		}
		as.ended = append(as.ended[:0:0], as.ended[over:]...)
	}
}

// expire ends a as expired, sent what it says, unless it was answered
// first: then it returns that answer and false.
func (as *asks) expire(a *ask, sent, why string) (reply, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if a.state == "answered" {
		return <-a.answer, false
	}
	as.end(a, "expired", sent, why)
	return reply{}, true
}

// deliver ends a as answered with r, and hands the answer to the call
// waiting on it; as.mu is held.
func (as *asks) deliver(a *ask, r reply) {
	sent := r.approval.Choice
	if a.kind == kindElicitation {
		sent = approval.Choice(r.mcp.Action)
		r.mcp.Content = maps.Clone(r.mcp.Content) // the SDK fills in defaults in the map it is given
	}
	as.end(a, "answered", string(sent), "")
	a.answer <- r // buffered: the one answer
}

// pending are conversation conv's asks of kind waiting for an answer on
// this server, oldest first.
func (as *asks) pending(kind, conv string) []*ask {
	as.mu.Lock()
	var out []*ask
	for _, a := range as.byID {
		if a.conv == conv && a.kind == kind && a.state == "pending" {
			out = append(out, a)
		}
	}
	as.mu.Unlock()
	sortByExpiry(out)
	return out
}

// sortByExpiry sorts asks oldest first (they expire in the order they
// were asked, for asks of one timeout).
func sortByExpiry(l []*ask) {
	slices.SortFunc(l, func(a, b *ask) int { return a.expires.Compare(b.expires) })
}
