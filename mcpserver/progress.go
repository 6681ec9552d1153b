package mcpserver

import (
	"context"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/tool"
)

// progress sends a call's progress (tool.ReportProgress) to the host that
// gave the call a progress token, as notifications/progress. Reports are
// sent from a goroutine of its own, so that a handler never waits on the
// host: when reports come faster than they are sent, the latest is sent
// and those before it are dropped. Progress must rise (the protocol says
// so), so a report whose Done is not above the last one taken is
// dropped too. Nothing is sent once the call is over (stop).
type progress struct {
	ctx   context.Context
	ss    *sdk.ServerSession
	token any

	mu      sync.Mutex
	last    float64
	any     bool           // a report was taken
	pending *tool.Progress // the report to send next

	wake    chan struct{}
	end     chan struct{}
	stopped chan struct{}
}

// startProgress starts sending the progress of the call run under ctx to
// ss, under token.
func startProgress(ctx context.Context, ss *sdk.ServerSession, token any) *progress {
	p := &progress{ctx: ctx, ss: ss, token: token, wake: make(chan struct{}, 1), end: make(chan struct{}), stopped: make(chan struct{})}
	go p.loop()
	return p
}

// report takes a report of the call's handler (tool.WithProgress).
func (p *progress) report(r tool.Progress) {
	p.mu.Lock()
	if p.any && r.Done <= p.last {
		p.mu.Unlock()
		return
	}
	p.any, p.last, p.pending = true, r.Done, &r
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // a wake is pending: it sends this one
	}
}

func (p *progress) loop() {
	defer close(p.stopped)
	for {
		select {
		case <-p.end:
			return
		case <-p.wake:
		}
		p.mu.Lock()
		r := p.pending
		p.pending = nil
		p.mu.Unlock()
		if r == nil {
			continue
		}
		_ = p.ss.NotifyProgress(p.ctx, &sdk.ProgressNotificationParams{ProgressToken: p.token, Progress: r.Done, Total: r.Total, Message: r.Message})
	}
}

// stop ends the sending: it returns once no notification is on its way,
// so that none follows the call's result.
func (p *progress) stop() {
	close(p.end)
	<-p.stopped
}
