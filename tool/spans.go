package tool

import (
	"context"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/telemetry"
)

// spans are the execute_tool spans of a round's calls, by call index
// (telemetry.StartTool); nil when telemetry is off, and then every method
// returns at once. A call's span is started by the round's goroutine
// before the call's goroutine starts (start) and ended once, where its
// result is handed on (end): the slot is written before it is read.
type spans []telemetry.ToolSpan

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
	ctx, s[i] = telemetry.StartTool(ctx, telemetry.Tool{Name: c.Name, CallID: c.ID, Arguments: c.Input})
	return ctx
}

// end ends call i's span with its converted output. A call settled
// without running (refused, denied, not started) has no span yet: it gets
// one that starts and ends here, under ctx, the round's.
func (s spans) end(ctx context.Context, i int, c Call, out result.Output) {
	if s == nil {
		return
	}
	if !s[i].Started() {
		s.start(ctx, i, c)
	}
	s[i].End(ctx, telemetry.ToolEnd{Bytes: len(out.Text), SpillPath: out.SpillPath, IsError: out.IsError, Result: out.Text})
}

// endResult is end for a result taken whole, not converted (Run): its
// size is not known.
func (s spans) endResult(ctx context.Context, i int, c Call, r result.Result) {
	if s == nil {
		return
	}
	if !s[i].Started() {
		s.start(ctx, i, c)
	}
	s[i].End(ctx, telemetry.ToolEnd{IsError: r.IsError})
}
