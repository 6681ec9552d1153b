package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
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
	// call's goroutine, or the round's when it gives up on the call) with
	// how long it took, for progress reports.
	Finished func(i int, c Call, elapsed time.Duration)
	// Converted, when set, is called by Round as each call finishes (from
	// the call's goroutine — the round's for a call given up on —, after
	// Finished) with its output converted alone
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

// each runs the calls concurrently and hands each result to done as it
// finishes: from the call's own goroutine when its handler returns in time
// (so that conversions run side by side), else from the caller's, which
// gives up on a call at its timeout or when ctx is cancelled. A call costs
// one goroutine; the round's timeouts share a timer (a hand-off less per
// call than a watcher each: on a light round that is most of the
// dispatcher's cost). It returns when every call is settled.
func (d *Dispatcher) each(ctx context.Context, calls []Call, done func(i int, r result.Result)) {
	start := time.Now()
	settle := func(i int, r result.Result) {
		if d.Finished != nil {
			d.Finished(i, calls[i], time.Since(start))
		}
		done(i, r)
	}
	// state of each call: running, finished by its handler, or given up
	const (
		running int32 = iota
		finished
		givenUp
	)
	state := make([]atomic.Int32, len(calls))
	deadline := make([]time.Time, len(calls))
	timeouts := make([]time.Duration, len(calls))
	settled := make(chan struct{}, len(calls))
	timed := map[time.Duration]context.Context{} // one deadline per timeout the round's tools have
	var cancels []context.CancelFunc
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	pending := 0
	for i, c := range calls {
		t, input, timeout, bad := d.prepare(c)
		if bad != nil {
			state[i].Store(finished)
			settle(i, *bad)
			continue
		}
		tctx, ok := timed[timeout]
		if !ok {
			// the handler's context ends at the very time the round gives
			// up on the call (start + timeout), not later by the time the
			// calls before it took to prepare: a handler that works to
			// its deadline is not cut before it
			var cancel context.CancelFunc
			tctx, cancel = context.WithDeadline(ctx, start.Add(timeout))
			timed[timeout] = tctx
			cancels = append(cancels, cancel)
		}
		deadline[i], timeouts[i] = start.Add(timeout), timeout
		pending++
		cctx := WithCap(tctx, result.CapFor(c.Cap, d.Env.Limits))
		go func() {
			r := handle(cctx, t, c.Name, input)
			if !state[i].CompareAndSwap(running, finished) {
				// given up on: what it returns is never converted, and
				// must not leave its file behind
				result.Discard(r)
				return
			}
			settle(i, r)
			settled <- struct{}{}
		}()
	}
	// give up on the calls still running at their timeout, or all of them
	// when ctx is cancelled
	giveUp := func(i int, why string) {
		if state[i].CompareAndSwap(running, givenUp) {
			pending--
			settle(i, result.Error(why))
		}
	}
	var timer *time.Timer
	var fire <-chan time.Time
	arm := func() {
		next := time.Time{}
		for i := range calls {
			if state[i].Load() == running && (next.IsZero() || deadline[i].Before(next)) {
				next = deadline[i]
			}
		}
		fire = nil
		if next.IsZero() {
			return
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(next))
		} else {
			timer.Reset(time.Until(next))
		}
		fire = timer.C
	}
	arm()
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	cancelled := ctx.Done()
	for pending > 0 {
		select {
		case <-settled:
			pending--
		case now := <-fire:
			for i := range calls {
				if !deadline[i].IsZero() && !now.Before(deadline[i]) {
					giveUp(i, fmt.Sprintf("tool %s did not finish within %v and was cancelled; it may have done part of its work", calls[i].Name, timeouts[i]))
				}
			}
			arm()
		case <-cancelled:
			cancelled = nil
			for i := range calls {
				giveUp(i, fmt.Sprintf("tool %s was cancelled before it finished; it may have done part of its work", calls[i].Name))
			}
			fire = nil
		}
	}
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

// prepare finds call c's tool, its input ({} when empty or null) and its
// timeout, or the error result that settles the call at once (an unknown
// tool, input its schema refuses).
func (d *Dispatcher) prepare(c Call) (t *Tool, input json.RawMessage, timeout time.Duration, bad *result.Result) {
	if d.Tools != nil {
		t = d.Tools.Get(c.Name)
	}
	if t == nil {
		r := result.Error(d.unknown(c.Name))
		return nil, nil, 0, &r
	}
	input = c.Input
	if in := strings.TrimSpace(string(input)); in == "" || in == "null" {
		// no arguments: some models send null for a tool that takes none
		input = json.RawMessage("{}")
	}
	if err := t.validate(input); err != nil {
		r := result.Error(fmt.Sprintf("invalid input for %s: %v", c.Name, err))
		return nil, nil, 0, &r
	}
	timeout = d.Timeout
	if t.Timeout > 0 {
		timeout = t.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return t, input, timeout, nil
}

// handle runs t's handler, a panic becoming an error result.
func handle(ctx context.Context, t *Tool, name string, input json.RawMessage) (r result.Result) {
	defer func() {
		if p := recover(); p != nil {
			r = result.Error(fmt.Sprintf("tool %s failed: it panicked: %v\n%s", name, p, firstLines(string(debug.Stack()), 12)))
		}
	}()
	return t.Handler(ctx, input)
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
