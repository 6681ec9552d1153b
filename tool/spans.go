package tool

import (
	"context"
	"time"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/telemetry"
)

// spans are the execute_tool spans of a round's calls, by call index
// (telemetry.StartTool), with when each call finished; nil when telemetry
// is off, and then every method returns at once. A call's span is started
// by the round's goroutine before the call's goroutine starts (start),
// its finish noted where its result is handed on (finished), and ended
// once every call of the round is settled and the round bound applied
// (end): a slot is written before it is read.
type spans []toolSpan

type toolSpan struct {
	span telemetry.ToolSpan
	at   time.Time // when the call finished
}

func newSpans(n int) spans {
	if !telemetry.On() {
		return nil
	}
	return make(spans, n)
}

// start starts call i's span under ctx and returns the context its
// handler runs under, which carries it.
func (s spans) start(ctx context.Context, i int, c Call) context.Context {
	if s == nil {
		return ctx
	}
	ctx, s[i].span = telemetry.StartTool(ctx, telemetry.Tool{Name: c.Name, CallID: c.ID, Arguments: c.Input})
	return ctx
}

// finished notes that call i finished now. A call settled without running
// (refused, denied, not started) has no span yet: it gets one that starts
// here, under ctx, the round's.
func (s spans) finished(ctx context.Context, i int, c Call) {
	if s == nil {
		return
	}
	if !s[i].span.Started() {
		s.start(ctx, i, c)
	}
	s[i].at = time.Now()
}

// end ends every call's span, at the time it finished, with its output
// as the model gets it (after the round bound).
func (s spans) end(ctx context.Context, calls []Call, outs []result.Output) {
	for i := range s {
		out := outs[i]
		s[i].span.End(ctx, telemetry.ToolEnd{At: s[i].at, Bytes: len(out.Text), SpillPath: out.SpillPath, IsError: out.IsError, Result: out.Text})
	}
}

// endResult ends call i's span with a result taken whole, not converted
// (Run): its size is not known.
func (s spans) endResult(i int, r result.Result) {
	if s == nil {
		return
	}
	s[i].span.End(context.Background(), telemetry.ToolEnd{At: s[i].at, IsError: r.IsError})
}
