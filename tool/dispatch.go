package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/myelin-run/myelin/permission"
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
	// Workers, when set, runs the calls on goroutines kept from earlier
	// rounds (see Workers); nil starts one for each call.
	Workers *Workers
	// Gate, when set, checks every call before it runs (SPEC §14), in
	// place of the Gate of the round's context (GateOf); with neither,
	// every call runs.
	Gate Gate
	// Ruled, when set, is called with the Gate's decision on each call it
	// checked (the call's tool found, its input valid), before any call
	// of the round starts; for several calls, from several goroutines at
	// once. It is how the decision reaches the history (agent stores it
	// with the call's result). It must not block for long.
	Ruled func(i int, c Call, rec permission.Record)
}

// Round runs the calls and returns their outputs in call order, each
// converted once by package result as it finishes (result.Convert), then
// bounded together (result.Fit: the round bound). Every call is first
// checked by the Gate (Dispatcher.Gate, else the context's), all of them
// before any starts; a denied call does not run and gets an error result
// saying why. Then the calls run in the order the model gave them, those
// that may run alongside others (Tool.Concurrent) together, each other
// one alone (see segments). A call that panics, names no known tool, has
// input that fails the tool's schema or outlives its timeout (counted
// from when it starts) gets an error result saying so. Cancelling ctx
// cancels every call; the calls not yet finished get error results
// saying they were cancelled, and those not yet started do not start.
func (d *Dispatcher) Round(ctx context.Context, calls []Call) []result.Output {
	return d.round(ctx, calls, time.Time{})
}

// round is Round, its calls run on the caller's goroutine (here) when
// until is set: the caller gives up on them at until (CallHere).
func (d *Dispatcher) round(ctx context.Context, calls []Call, until time.Time) []result.Output {
	outs := make([]result.Output, len(calls))
	spans := newSpans(len(calls))
	d.each(ctx, calls, spans, until, func(i int, r result.Result) {
		outs[i] = result.Convert(result.Call{ID: calls[i].ID, Result: r, Cap: calls[i].Cap}, d.Env)
		spans.finished(ctx, i, calls[i])
		if d.Converted != nil {
			d.Converted(i, calls[i], outs[i])
		}
	})
	outs = result.Fit(outs, d.Env)
	// the spans say what the model gets: the round bound may have cut
	// and spilled a result that fit its own cap
	spans.end(ctx, calls, outs)
	return outs
}

// Call runs one call: a round of one.
func (d *Dispatcher) Call(ctx context.Context, c Call) result.Output {
	return d.Round(ctx, []Call{c})[0]
}

// Run runs the calls as Round does and returns their results before
// conversion, in call order. It is for consumers that take results whole
// (a script's structured content); text for the conversation comes from
// Round.
func (d *Dispatcher) Run(ctx context.Context, calls []Call) []result.Result {
	out := make([]result.Result, len(calls))
	spans := newSpans(len(calls))
	d.each(ctx, calls, spans, time.Time{}, func(i int, r result.Result) {
		out[i] = r
		spans.finished(ctx, i, calls[i])
		spans.endResult(i, r)
	})
	return out
}

// prepared is a call ready to run: its tool, its input and its timeout;
// a nil tool is a call settled already (refused, denied).
type prepared struct {
	tool    *Tool
	input   json.RawMessage
	timeout time.Duration
}

// each settles every call and hands each result to done as it is known:
// first the calls refused (an unknown tool, a bad input) and those the
// Gate does not allow, then the others, segment by segment (segments),
// each segment run by batch. It returns when every call is settled. Each
// call's span (spans: nil when telemetry is off) starts before it runs,
// or as it is settled unrun; done ends it. When until is set, a segment
// of one call runs on this goroutine if its timeout ends no earlier
// (here, CallHere).
func (d *Dispatcher) each(ctx context.Context, calls []Call, spans spans, until time.Time, done func(i int, r result.Result)) {
	if ScopeOf(ctx) == nil {
		ctx = context.WithValue(ctx, scopeKey{}, &Scope{})
	}
	ready := make([]prepared, len(calls))
	left := 0
	for i, c := range calls {
		t, input, timeout, bad := d.prepare(c)
		if bad != nil {
			d.settleNow(i, c, *bad, done)
			continue
		}
		ready[i] = prepared{t, input, timeout}
		left++
	}
	if g := d.gate(ctx); g != nil && left > 0 {
		d.check(ctx, g, calls, ready, done)
	}
	for _, seg := range segments(ready) {
		if ctx.Err() != nil {
			for _, i := range seg {
				d.settleNow(i, calls[i], result.Error(notStartedWhy(calls[i].Name)), done)
			}
			continue
		}
		if len(seg) == 1 && !until.IsZero() && d.here(ctx, calls, seg[0], ready[seg[0]], spans, until, done) {
			continue
		}
		// each batch its own slice of indexes: a call given up on at its
		// timeout still runs, and reads its batch's after the next began
		d.batch(ctx, calls, seg, ready, spans, done)
	}
}

// segments splits the calls left to run into the groups that run one
// after another (SPEC §3 of issue 28, docs/tools.md "Dispatch"): a run
// of calls whose tools may run alongside others (Tool.Concurrent: the
// reads) is one group, run together; every other call (one that changes
// something) is a group of its own. So calls that change state run one
// at a time, in the order the model gave them, each after the reads
// that came before it, and reads next to each other overlap.
func segments(ready []prepared) [][]int {
	var segs [][]int
	together := false // the last segment is a run of concurrent calls
	for i, p := range ready {
		if p.tool == nil {
			continue
		}
		c := p.tool.Concurrent()
		if c && together {
			segs[len(segs)-1] = append(segs[len(segs)-1], i)
			continue
		}
		segs = append(segs, []int{i})
		together = c
	}
	return segs
}

// settleNow settles call i before it runs: it took no time.
func (d *Dispatcher) settleNow(i int, c Call, r result.Result, done func(int, result.Result)) {
	if d.Finished != nil {
		d.Finished(i, c, 0)
	}
	done(i, r)
}

// batch runs the calls idx (indexes into calls) concurrently and hands
// each result to done as it finishes: from the call's own goroutine when
// its handler returns in time (so that conversions run side by side),
// else from the caller's, which gives up on a call at its timeout or
// when ctx is cancelled. A call costs one goroutine; the batch's
// goroutine is woken once, when the last call settles, not once a call,
// and its timeouts are the calls' own deadline contexts (one per timeout
// the batch's tools have, counted from the batch's start, when its calls
// start), with no timer of its own. Each call's span starts here, before
// its goroutine does (spans). It returns when every call is settled.
func (d *Dispatcher) batch(ctx context.Context, calls []Call, idx []int, ready []prepared, spans spans, done func(i int, r result.Result)) {
	r := &round{d: d, calls: calls, idx: idx, done: done, start: time.Now(), slots: make([]slot, len(idx)), settled: make(chan struct{}, 1)}
	defer func() {
		// A call given up on runs on, and reads why its context ended.
		// Once ctx has ended, its cancel is on its way down to the
		// limits' contexts with its cause (it closes ctx.Done before it
		// goes down to its children): cancelled here first, a call would
		// read a bare Canceled, not why the round's context ended.
		if ctx.Err() != nil {
			return
		}
		for _, l := range r.limits {
			l.cancel()
		}
	}()
	// counted before any call runs, so that no call can see the round
	// settled while others are still to start
	r.pending.Store(int32(len(idx)) + 1)
	for j, i := range idx {
		p := ready[i]
		s := &r.slots[j]
		s.limit = r.limit(ctx, p.timeout)
		s.tool, s.input = p.tool, p.input
		s.ctx = spans.start(r.capped(s.limit, result.CapFor(calls[i].Cap, d.Env.Limits)), i, calls[i])
		d.Workers.Go(func() { r.run(j) })
	}
	if r.pending.Add(-1) == 0 {
		return // every call settled already
	}
	cancelled := ctx.Done()
	for r.pending.Load() > 0 {
		// the running call whose deadline comes first: its context ends
		// then (or when ctx does)
		var fire <-chan struct{}
		if l := r.first(); l != nil {
			fire = l.ctx.Done()
		}
		select {
		case <-r.settled:
		case <-fire:
			if ctx.Err() != nil {
				r.giveUpAll(cancelledWhy)
				cancelled = nil
				continue
			}
			for j := range r.slots {
				if l := r.slots[j].limit; l != nil && l.ctx.Err() != nil {
					r.giveUp(j, fmt.Sprintf("tool %s did not finish within %v and was cancelled; it may have done part of its work", calls[idx[j]].Name, l.timeout))
				}
			}
		case <-cancelled:
			r.giveUpAll(cancelledWhy)
			cancelled = nil
		}
	}
}

// The states of a call in a round.
const (
	running int32 = iota
	finished
	givenUp
)

// round is one run of Dispatcher.batch: its calls and what they need.
// Its slots are the calls idx of calls, in that order; done takes an
// index into calls.
type round struct {
	d       *Dispatcher
	calls   []Call
	idx     []int
	done    func(i int, r result.Result)
	start   time.Time
	slots   []slot
	pending atomic.Int32  // calls not settled yet
	settled chan struct{} // signalled by the call that settles the last
	limits  []*limit      // one per timeout the round's tools have
	ctxs    []capped      // the calls' contexts, one per limit and cap
}

// slot is one call of a round.
type slot struct {
	state atomic.Int32 // running, finished or givenUp
	tool  *Tool
	input json.RawMessage
	ctx   context.Context
	limit *limit
}

// limit is the deadline of the round's calls that have one timeout: the
// handler's context ends at the very time the round gives up on the call
// (start + timeout), not later by the time the calls before it took to
// prepare, so a handler that works to its deadline is not cut before it.
type limit struct {
	timeout time.Duration
	ctx     context.Context
	cancel  context.CancelFunc
}

// capped is a context the calls of one limit and one cap share.
type capped struct {
	limit *limit
	cap   int
	ctx   context.Context
}

// limit is the round's deadline context for timeout, made on first use.
func (r *round) limit(ctx context.Context, timeout time.Duration) *limit {
	for _, l := range r.limits {
		if l.timeout == timeout {
			return l
		}
	}
	l := &limit{timeout: timeout}
	l.ctx, l.cancel = context.WithDeadline(ctx, r.start.Add(timeout))
	r.limits = append(r.limits, l)
	return l
}

// capped is l's context carrying cap (WithCap), made on first use.
func (r *round) capped(l *limit, cap int) context.Context {
	for _, c := range r.ctxs {
		if c.limit == l && c.cap == cap {
			return c.ctx
		}
	}
	ctx := WithCap(l.ctx, cap)
	r.ctxs = append(r.ctxs, capped{l, cap, ctx})
	return ctx
}

// run runs the call of slot j on its own goroutine and settles it,
// unless the round has given up on it.
func (r *round) run(j int) {
	s := &r.slots[j]
	c := &r.calls[r.idx[j]]
	res := handle(withCallID(s.ctx, c.ID), s.tool, c.Name, s.input)
	if !s.state.CompareAndSwap(running, finished) {
		// given up on: what it returns is never converted, and must not
		// leave its file behind
		result.Discard(res)
		return
	}
	r.settle(j, res)
	if r.pending.Add(-1) == 0 {
		r.settled <- struct{}{}
	}
}

// settle reports the end of slot j's call and hands its result on.
func (r *round) settle(j int, res result.Result) {
	i := r.idx[j]
	if r.d.Finished != nil {
		r.d.Finished(i, r.calls[i], time.Since(r.start))
	}
	r.done(i, res)
}

// first is the limit of the running call whose deadline comes first, or
// nil when no call runs.
func (r *round) first() *limit {
	var first *limit
	for i := range r.slots {
		s := &r.slots[i]
		if l := s.limit; l != nil && s.state.Load() == running && (first == nil || l.timeout < first.timeout) {
			first = l
		}
	}
	return first
}

// giveUp settles slot j's call, still running, with an error result
// saying why, from the round's goroutine.
func (r *round) giveUp(j int, why string) {
	if r.slots[j].state.CompareAndSwap(running, givenUp) {
		r.settle(j, result.Error(why))
		r.pending.Add(-1)
	}
}

// giveUpAll gives up on every call still running: ctx is cancelled.
func (r *round) giveUpAll(why func(name string) string) {
	for j := range r.slots {
		if r.slots[j].state.Load() == running {
			r.giveUp(j, why(r.calls[r.idx[j]].Name))
		}
	}
}

func cancelledWhy(name string) string {
	return fmt.Sprintf("tool %s was cancelled before it finished; it may have done part of its work", name)
}

// callIDKey carries a call's id to its handler.
type callIDKey struct{}

// CallID is the id of the call whose handler runs under ctx (Call.ID), ""
// outside a call: for a tool that links what it makes to its call (a
// subagent's conversation, agent--delegate). The dispatcher sets it for
// every call it runs; a tool must not take it for unique beyond its
// conversation.
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

func withCallID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, callIDKey{}, id)
}

// conversationKey carries the conversation whose calls run under a ctx.
type conversationKey struct{}

// WithConversation is ctx for the calls of conversation id: whoever runs a
// conversation's calls (the agent, for each round and each call it runs
// again at recovery) wraps their context with it.
func WithConversation(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, conversationKey{}, id)
}

// ConversationOf is the conversation whose call runs under ctx
// (WithConversation), "" outside one: for a tool that acts on its
// conversation's behalf (agent--delegate links its child to it; the
// background scripts a call starts are its conversation's). A tool must
// not write to that conversation: the turn running the call is its one
// writer.
func ConversationOf(ctx context.Context) string {
	id, _ := ctx.Value(conversationKey{}).(string)
	return id
}

// scopeKey carries the Scope of the outermost round a call runs under.
type scopeKey struct{}

// Scope is what the calls of one round share with everything they run: a
// script's calls, a subagent's turn and its own rounds, down the tree. The
// dispatcher makes one for each round it runs outside any call (an agent's
// round, a call over the API); a round inside a call (a script's calls, a
// subagent's rounds) has its caller's. A tool keeps there, under a key of
// its own type, what must be bounded across the whole tree, however many
// calls it fans out to (agent--delegate: the token budget of its
// subagents). It holds nothing of its own and must not be used to pass
// results between calls.
type Scope struct{ m sync.Map }

// Shared is the value under key, made by make the first time it is asked
// for; make may run more than once when callers race, and one value wins.
func (s *Scope) Shared(key any, make func() any) any {
	if v, ok := s.m.Load(key); ok {
		return v
	}
	v, _ := s.m.LoadOrStore(key, make())
	return v
}

// ScopeOf is the Scope of the round whose call runs under ctx, nil outside
// any call.
func ScopeOf(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
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
	if in := bytes.TrimSpace(input); len(in) == 0 || string(in) == "null" {
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
