package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/myelin-run/myelin/result"
)

// DefaultTimeout bounds one call when the Dispatcher sets no Timeout.
const DefaultTimeout = 120 * time.Second

// Call is one tool call of a round, as the model made it.
type Call struct {
	// ID is the provider's id for the call; it names spill files.
	ID string
	// Name is the tool's name.
	Name string
	// Input is the call's arguments, a JSON object; empty or null means {}.
	Input json.RawMessage
	// Cap is the call's own limit on its text (contract §5); 0 means none.
	Cap int
}

// Dispatcher runs rounds of calls against a registry. The zero value has no
// tools; every call to it is an "unknown tool" error result.
type Dispatcher struct {
	// Tools are the tools calls may name.
	Tools *Registry
	// Env is what the conversion needs: the workspace's store and the caps.
	Env result.Env
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Finished, when set, is called as each call of a round ends (from the
	// call's goroutine) with how long it took, for progress reports.
	Finished func(i int, c Call, elapsed time.Duration)
	// Converted, when set, is called by Round as each call finishes (from
	// the call's goroutine, after Finished) with its output converted alone
	// (result.Convert): its spill written, its text before the round bound,
	// which may shorten it in what Round returns. It is where a result is
	// kept the moment its call is done (contract §7), before the rest of the
	// round. It must not block for long: the round waits for it.
	Converted func(i int, c Call, out result.Output)
}

// Round runs the calls concurrently and returns their outputs in call order,
// each converted once by package result as it finishes (result.Convert), then
// bounded together (result.Fit: the round bound). A call that panics, names
// no known tool, has input that fails the tool's schema or outlives its
// timeout gets an error result saying so. Cancelling ctx cancels every call;
// the calls not yet finished get error results saying they were cancelled.
func (d *Dispatcher) Round(ctx context.Context, calls []Call) []result.Output {
	outs := make([]result.Output, len(calls))
	d.each(ctx, calls, func(i int, r result.Result) {
		outs[i] = result.Convert(result.Call{ID: calls[i].ID, Result: r, Cap: calls[i].Cap}, d.Env)
		if d.Converted != nil {
			d.Converted(i, calls[i], outs[i])
		}
	})
	return result.Fit(outs, d.Env)
}

// Call runs one call: a round of one.
func (d *Dispatcher) Call(ctx context.Context, c Call) result.Output {
	return d.Round(ctx, []Call{c})[0]
}

// Run runs the calls concurrently and returns their results before
// conversion, in call order. It is for consumers that take results whole
// (a script's structured content); text for the conversation comes from
// Round.
func (d *Dispatcher) Run(ctx context.Context, calls []Call) []result.Result {
	out := make([]result.Result, len(calls))
	d.each(ctx, calls, func(i int, r result.Result) { out[i] = r })
	return out
}

// each runs the calls concurrently and hands each result to done, from the
// call's goroutine, as it finishes. It returns when every call is done.
func (d *Dispatcher) each(ctx context.Context, calls []Call, done func(i int, r result.Result)) {
	if len(calls) == 1 { // nothing to run beside it: no goroutine to hand it to
		done(0, d.timed(ctx, 0, calls[0]))
		return
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { done(i, d.timed(ctx, i, c)) })
	}
	wg.Wait()
}

// timed runs call i and reports how long it took to Finished.
func (d *Dispatcher) timed(ctx context.Context, i int, c Call) result.Result {
	start := time.Now()
	r := d.run(ctx, c)
	if d.Finished != nil {
		d.Finished(i, c, time.Since(start))
	}
	return r
}

// capKey carries a call's cap to its handler.
type capKey struct{}

// CapFrom is the cap the running call's text must fit, for tools that page
// their output to fit it (workspace--read). Outside a call it is the default.
func CapFrom(ctx context.Context) int {
	if c, ok := ctx.Value(capKey{}).(int); ok {
		return c
	}
	return result.DefaultCap
}

// WithCap returns a context whose CapFrom is cap; the dispatcher sets it for
// every call.
func WithCap(ctx context.Context, cap int) context.Context {
	return context.WithValue(ctx, capKey{}, cap)
}

func (d *Dispatcher) run(ctx context.Context, c Call) result.Result {
	var t *Tool
	if d.Tools != nil {
		t = d.Tools.Get(c.Name)
	}
	if t == nil {
		return result.Error(d.unknown(c.Name))
	}
	input := c.Input
	if in := strings.TrimSpace(string(input)); in == "" || in == "null" {
		// no arguments: some models send null for a tool that takes none
		input = json.RawMessage("{}")
	}
	if err := t.validate(input); err != nil {
		return result.Error(fmt.Sprintf("invalid input for %s: %v", c.Name, err))
	}
	timeout := d.Timeout
	if t.Timeout > 0 {
		timeout = t.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(WithCap(ctx, result.CapFor(c.Cap, d.Env.Limits)), timeout)
	defer cancel()
	ch := make(chan result.Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- result.Error(fmt.Sprintf("tool %s failed: it panicked: %v\n%s", c.Name, p, firstLines(string(debug.Stack()), 12)))
			}
		}()
		ch <- t.Handler(ctx, input)
	}()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		select {
		case r := <-ch: // finished as time ran out: its result stands
			return r
		default:
		}
		// given up on: what it returns when it ends is never converted, and
		// must not leave its file behind
		go func() { result.Discard(<-ch) }()
		if ctx.Err() == context.DeadlineExceeded {
			return result.Error(fmt.Sprintf("tool %s did not finish within %v and was cancelled; it may have done part of its work", c.Name, timeout))
		}
		return result.Error(fmt.Sprintf("tool %s was cancelled before it finished; it may have done part of its work", c.Name))
	}
}

func (d *Dispatcher) unknown(name string) string {
	var names []string
	if d.Tools != nil {
		names = d.Tools.Names()
	}
	if len(names) == 0 {
		return fmt.Sprintf("there is no tool named %q, and no tools are available", name)
	}
	return fmt.Sprintf("there is no tool named %q; the tools are: %s", name, strings.Join(names, ", "))
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
