package background

import (
	"fmt"
	"sync"
	"time"
)

// Wake is a background script waking the agent: the user message that
// starts the woken turn, and what it says, for a program to show. It is
// the data of a server's wake event: every text in it is as the agent is
// told it.
type Wake struct {
	Conversation string `json:"conversation"`
	Script       string `json:"script"`
	// N is which wake of the script this is, and Of the most it may make;
	// both 0 for a death wake (Died).
	N  int `json:"n,omitempty"`
	Of int `json:"of,omitempty"`
	// Line is the script's line wake_agent was called from (0: unknown).
	Line int `json:"line,omitempty"`
	// Since is how long after the script's start wake_agent was called,
	// or the script died.
	Since time.Duration `json:"since_ns"`
	// Held is how long the wake was held to keep wakes Limits.Gap apart.
	Held time.Duration `json:"held_ns,omitempty"`
	// Died marks the one wake of a script that died without waking the
	// agent: Message then says why, with its last output.
	Died bool `json:"died,omitempty"`
	// Journal is the workspace path of the script's journal.
	Journal string `json:"journal"`
	// SpillPath is the workspace path of the spill file of a payload over
	// its cap, "" when it was not cut.
	SpillPath string `json:"spill_path,omitempty"`
	// Message is the user message of the woken turn: a line saying who
	// woke the agent, then the payload's text (contract §2, capped §5).
	Message string `json:"message"`
}

// Waker gets each wake once it is due (a wake held to keep the gap comes
// when the gap has passed). It must not block: the woken turn runs after
// the turn in progress, on the conversation's own queue (Queue for the
// CLI; a server's turn queue, which emits the wake as an event first).
type Waker interface {
	Wake(w Wake)
}

// Queue is a Waker that keeps wakes in order until they are taken: what
// `myelin chat` waits on between lines. It never drops one.
type Queue struct {
	mu    sync.Mutex
	items []Wake
	ready chan struct{}
}

// NewQueue returns an empty Queue.
func NewQueue() *Queue { return &Queue{ready: make(chan struct{}, 1)} }

// Wake queues w and signals Ready.
func (q *Queue) Wake(w Wake) {
	q.mu.Lock()
	q.items = append(q.items, w)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled when a wake has been queued since it was last read.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Next takes the oldest queued wake.
func (q *Queue) Next() (Wake, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return Wake{}, false
	}
	w := q.items[0]
	q.items = q.items[1:]
	return w, true
}

// header is the first line of a wake's message.
func (w Wake) header() string {
	if w.Died {
		return fmt.Sprintf("[myelin: background script %s ended %s after it started without waking you. Its journal: %s. How it ended, and the end of what it printed:]",
			w.Script, roundDur(w.Since), w.Journal)
	}
	held := ""
	if w.Held > 0 {
		held = fmt.Sprintf(" (held %s to keep wakes apart)", roundDur(w.Held))
	}
	line := ""
	if w.Line > 0 {
		line = fmt.Sprintf(" from line %d of the script,", w.Line)
	}
	return fmt.Sprintf("[myelin: background script %s woke you with wake_agent,%s %s after it started%s: wake %d of at most %d. Its journal: %s. Its payload:]",
		w.Script, line, roundDur(w.Since), held, w.N, w.Of, w.Journal)
}

// roundDur is d for a reader: to the second from a second up.
func roundDur(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
