package mcpserver

import (
	"context"
	"slices"
	"sync"
)

// turns orders the calls hosts make at the same time, as a round orders
// the model's (tool.Dispatcher.Round): a call of a tool that may run
// alongside others (tool.Tool.Concurrent: the reads) runs with the other
// such calls, and a call of any other tool runs alone, in the order the
// calls came. It is a queue: a call waits for those that came before
// it, so a read that comes after a write waits for the write, and a
// write for the reads before it. A call of a tool that orders its own
// calls (tool.Tool.Alongside and not read-only: the agent, a subagent)
// takes no turn at all (turnGate): its calls are each checked as they
// come, and a turn held for all of it would stall every later write, and
// the calls behind that, for as long as it runs. The zero value is ready
// to use.
//
// The order is the order in which the calls reach the queue, over every
// session of the server: calls a host sends at the same moment have no
// order the protocol promises.
type turns struct {
	mu      sync.Mutex
	running int  // calls running
	alone   bool // the one running runs alone
	queue   []*waiter
}

// waiter is a call waiting for its turn.
type waiter struct {
	alone bool
	ready chan struct{} // closed when its turn has come
	in    bool          // its turn has come
}

// take waits for a turn: one alone, or one alongside others. It returns
// ctx's error, and takes no turn, when ctx is done first.
func (q *turns) take(ctx context.Context, alone bool) error {
	w := &waiter{alone: alone, ready: make(chan struct{})}
	q.mu.Lock()
	q.queue = append(q.queue, w)
	q.admit()
	q.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.in {
		// its turn came as ctx ended: given back
		q.leave(alone)
	} else {
		q.queue = slices.DeleteFunc(q.queue, func(x *waiter) bool { return x == w })
		q.admit() // a call behind it may go now
	}
	return ctx.Err()
}

// give gives back a turn taken with take.
func (q *turns) give(alone bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.leave(alone)
}

// leave ends a turn and lets in those whose turn it is now; q.mu is held.
func (q *turns) leave(alone bool) {
	q.running--
	if alone {
		q.alone = false
	}
	q.admit()
}

// admit lets in the calls at the head of the queue that may run now; q.mu
// is held.
func (q *turns) admit() {
	for len(q.queue) > 0 {
		w := q.queue[0]
		switch {
		case w.alone && q.running > 0, !w.alone && q.alone:
			return
		}
		q.running++
		q.alone = w.alone
		w.in = true
		close(w.ready)
		q.queue = q.queue[1:]
	}
}

// waiting is how many calls wait for their turn (for tests).
func (q *turns) waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}
