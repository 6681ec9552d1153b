package tool

import "context"

// Progress is how far a running call has come, for the one who made it
// to see while it runs: an MCP host that gave the call a progress token
// (package mcpserver sends it as notifications/progress). It is not part
// of the call's result and never reaches the model.
type Progress struct {
	// Done is how much is done, rising with every report of a call.
	Done float64
	// Total is how much there is to do, 0 when unknown.
	Total float64
	// Message says in words what the call is doing now.
	Message string
}

// progressKey carries the progress reporter of the calls run under a ctx.
type progressKey struct{}

// WithProgress is ctx under which a call's handler reports its progress
// to report (ReportProgress). Whoever runs a call for someone watching it
// sets it; report is called from the handler's goroutine, and must not
// block for long. A nil report leaves ctx as it is.
func WithProgress(ctx context.Context, report func(Progress)) context.Context {
	if report == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, report)
}

// ReportProgress tells the one watching the call run under ctx how far
// it has come, and does nothing when no one watches: a handler calls it
// freely.
func ReportProgress(ctx context.Context, p Progress) {
	if report, ok := ctx.Value(progressKey{}).(func(Progress)); ok {
		report(p)
	}
}
