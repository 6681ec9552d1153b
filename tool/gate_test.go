package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// byName is a gate that allows or denies by tool name, counting the
// questions it is asked and what was running when it was.
type byName struct {
	deny     map[string]bool
	asked    atomic.Int32
	running  *atomic.Int32 // calls running, to see none runs while a call is checked
	ranEarly atomic.Bool
}

func (g *byName) Check(ctx context.Context, q Question) (Ruling, error) {
	g.asked.Add(1)
	if g.running != nil && g.running.Load() > 0 {
		g.ranEarly.Store(true)
	}
	if g.deny[q.Call.Name] {
		return Ruling{Record: permission.Record{Decision: "deny", By: "rule", Rule: "deny " + q.Call.Name, Reason: "denied by deny " + q.Call.Name}}, nil
	}
	return Ruling{Record: permission.Record{Decision: "allow", By: "default"}}, nil
}

// A call the gate denies is not run — its handler is never called — and
// its error result says it was denied and why; every checked call's
// record reaches Ruled, and no call starts before all are decided.
func TestADeniedCallIsNotRunAndSaysWhy(t *testing.T) {
	var running atomic.Int32
	var ranDenied atomic.Bool
	ok := reads(MustFunc("ok", "Runs.", func(ctx context.Context, _ struct{}) (any, error) {
		running.Add(1)
		return "ran", nil
	}))
	no := MustFunc("no", "Must not run.", func(ctx context.Context, _ struct{}) (any, error) {
		ranDenied.Store(true)
		return "ran", nil
	})
	d := dispatcher(t, ok, no)
	g := &byName{deny: map[string]bool{"no": true}, running: &running}
	d.Gate = g
	var mu sync.Mutex
	recs := map[int]permission.Record{}
	d.Ruled = func(i int, _ Call, r permission.Record) { mu.Lock(); recs[i] = r; mu.Unlock() }
	var c counts
	c.hook(d)
	calls := []Call{{ID: "a", Name: "ok"}, {ID: "b", Name: "no"}, {ID: "c", Name: "ok"}, {ID: "d", Name: "nope"}}
	outs := d.Round(context.Background(), calls)
	c.check(t, len(calls))
	if ranDenied.Load() {
		t.Fatal("the denied call's handler ran")
	}
	if g.ranEarly.Load() {
		t.Error("a call ran before every call of the round was decided")
	}
	if !outs[1].IsError || !strings.Contains(outs[1].Text, "denied") || !strings.Contains(outs[1].Text, "deny no") {
		t.Errorf("the denied call's result does not say it was denied and why: %+v", outs[1])
	}
	if outs[0].Text != "ran" || outs[2].Text != "ran" {
		t.Errorf("the allowed calls did not run: %+v %+v", outs[0], outs[2])
	}
	if g.asked.Load() != 3 {
		t.Errorf("the gate was asked %d times, want 3 (the unknown tool is refused before it)", g.asked.Load())
	}
	if len(recs) != 3 || recs[1].Decision != "deny" || recs[0].Decision != "allow" || recs[2].By != "default" {
		t.Errorf("Ruled got %+v, want a record for calls 0, 1 and 2", recs)
	}
	if _, ok := recs[3]; ok {
		t.Error("a call of an unknown tool got a record: it was never checked")
	}
}

// A round's Gate comes from the context when the dispatcher has none:
// a round inside a call (a script's calls) is checked by the gate of the
// round that made the call.
func TestARoundInsideACallIsCheckedByTheGateOnItsContext(t *testing.T) {
	var ranDenied atomic.Bool
	inner := &Registry{}
	if err := inner.Add(MustFunc("no", "Must not run.", func(ctx context.Context, _ struct{}) (any, error) {
		ranDenied.Store(true)
		return "ran", nil
	})); err != nil {
		t.Fatal(err)
	}
	var innerOut result.Output
	outer := MustFunc("script", "Runs a round of its own, as a script does.", func(ctx context.Context, _ struct{}) (any, error) {
		innerOut = (&Dispatcher{Tools: inner}).Call(ctx, Call{ID: "x", Name: "no"})
		return "done", nil
	})
	d := dispatcher(t, outer)
	g := &byName{deny: map[string]bool{"no": true}}
	out := d.Call(WithGate(context.Background(), g), Call{ID: "s", Name: "script"})
	if out.IsError || ranDenied.Load() {
		t.Fatalf("the inner call ran (%v) or the outer failed: %+v", ranDenied.Load(), out)
	}
	if !innerOut.IsError || !strings.Contains(innerOut.Text, "denied") {
		t.Errorf("the inner call's result does not say it was denied: %+v", innerOut)
	}
	if g.asked.Load() != 2 {
		t.Errorf("the gate was asked %d times, want 2: the outer call and the inner one", g.asked.Load())
	}
}

// slowGate holds every check until released, for a cancel while asking.
type slowGate struct{ asking chan struct{} }

func (g slowGate) Check(ctx context.Context, q Question) (Ruling, error) {
	g.asking <- struct{}{}
	<-ctx.Done()
	return Ruling{}, ctx.Err()
}

// A round cancelled while its calls are being decided runs none of them:
// each is answered as cancelled before it started.
func TestACancelWhileAskingRunsNothing(t *testing.T) {
	var ran atomic.Bool
	w := MustFunc("w", "Must not run.", func(ctx context.Context, _ struct{}) (any, error) {
		ran.Store(true)
		return "ran", nil
	})
	d := dispatcher(t, w)
	g := slowGate{asking: make(chan struct{}, 2)}
	d.Gate = g
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-g.asking
		<-g.asking
		cancel()
	}()
	outs := d.Round(ctx, []Call{{ID: "a", Name: "w"}, {ID: "b", Name: "w"}})
	if ran.Load() {
		t.Fatal("a call ran after its round was cancelled while it was being decided")
	}
	for i, o := range outs {
		if !o.IsError || !strings.Contains(o.Text, "cancelled before it started") {
			t.Errorf("call %d: %+v, want cancelled before it started", i, o)
		}
	}
}

// fileState is a file in memory that a test's tools write.
type fileState struct {
	mu   sync.Mutex
	text string
}

// Two writes to one file in one round happen in the order the model gave
// them, one after the other, never at once, even when the first is slow
// to start its write.
func TestTwoWritesOfARoundRunInTheirOrder(t *testing.T) {
	var f fileState
	var inside atomic.Int32
	var overlapped atomic.Bool
	app := MustFunc("append", "Appends to the file.", func(ctx context.Context, in struct {
		S string `json:"s"`
	}) (any, error) {
		if inside.Add(1) > 1 {
			overlapped.Store(true)
		}
		defer inside.Add(-1)
		if in.S == "first" {
			// give the second every chance to start now, were it able to
			for range 100 {
				runtime.Gosched()
			}
		}
		f.mu.Lock()
		f.text += in.S + ";"
		f.mu.Unlock()
		return "ok", nil
	})
	d := dispatcher(t, app)
	outs := d.Round(context.Background(), []Call{
		{ID: "1", Name: "append", Input: json.RawMessage(`{"s":"first"}`)},
		{ID: "2", Name: "append", Input: json.RawMessage(`{"s":"second"}`)},
	})
	for i, o := range outs {
		if o.IsError {
			t.Fatalf("call %d: %+v", i, o)
		}
	}
	if overlapped.Load() {
		t.Error("the two writes ran at the same time")
	}
	if f.text != "first;second;" {
		t.Errorf("the file holds %q, want the writes in the model's order: %q", f.text, "first;second;")
	}
}

// Reads next to each other run at once (each waits for the other to
// start), and a write after them starts only once they have finished; a
// read after the write starts only once it has.
func TestReadsOverlapAndAWriteWaitsForTheReadsBeforeIt(t *testing.T) {
	var reading sync.WaitGroup
	reading.Add(2)
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	read := reads(MustFunc("read", "Reads.", func(ctx context.Context, in struct {
		S string `json:"s"`
	}) (any, error) {
		if in.S != "after" {
			reading.Done()
			reading.Wait() // both reads must be running at once to get past this
		}
		note("read " + in.S)
		return "ok", nil
	}))
	write := MustFunc("write", "Writes.", func(ctx context.Context, _ struct{}) (any, error) {
		note("write")
		return "ok", nil
	})
	d := dispatcher(t, read, write)
	outs := d.Round(context.Background(), []Call{
		{ID: "1", Name: "read", Input: json.RawMessage(`{"s":"a"}`)},
		{ID: "2", Name: "read", Input: json.RawMessage(`{"s":"b"}`)},
		{ID: "3", Name: "write"},
		{ID: "4", Name: "read", Input: json.RawMessage(`{"s":"after"}`)},
	})
	for i, o := range outs {
		if o.IsError {
			t.Fatalf("call %d: %+v", i, o)
		}
	}
	if len(order) != 4 || order[2] != "write" || order[3] != "read after" {
		t.Errorf("the calls ran in the order %v, want the two reads, then the write, then the read after it", order)
	}
}

// The segments of a round: reads and tools that run alongside others
// are grouped while they follow each other; every other call is alone.
func TestSegmentsGroupOnlyCallsThatRunAlongside(t *testing.T) {
	r, w, a := &Tool{ReadOnly: true}, &Tool{}, &Tool{Alongside: true}
	ready := []prepared{{tool: r}, {tool: a}, {tool: w}, {tool: nil}, {tool: w}, {tool: r}, {tool: nil}, {tool: r}}
	got := fmt.Sprint(segments(ready))
	if want := "[[0 1] [2] [4] [5 7]]"; got != want {
		t.Errorf("segments %s, want %s", got, want)
	}
}

// A call's timeout starts when the call starts, not when its round does:
// a write that waits for a slow write before it still has its whole
// timeout.
func TestATimeoutStartsWhenItsCallStarts(t *testing.T) {
	var firstEnd time.Time
	slow := MustFunc("slow", "Takes longer than the dispatcher's timeout, within its own.", func(ctx context.Context, _ struct{}) (any, error) {
		time.Sleep(60 * time.Millisecond)
		firstEnd = time.Now()
		return "ok", nil
	})
	slow.Timeout = time.Minute
	var deadline time.Time
	next := MustFunc("next", "Reports its deadline.", func(ctx context.Context, _ struct{}) (any, error) {
		deadline, _ = ctx.Deadline()
		return "ok", nil
	})
	d := dispatcher(t, slow, next)
	d.Timeout = 30 * time.Millisecond
	outs := d.Round(context.Background(), []Call{{ID: "1", Name: "slow"}, {ID: "2", Name: "next"}})
	if outs[0].IsError || outs[1].IsError {
		t.Fatalf("outputs %+v", outs)
	}
	if !deadline.After(firstEnd) {
		t.Errorf("the second call's deadline %v is not after the first call's end %v: its timeout started with the round", deadline, firstEnd)
	}
}
