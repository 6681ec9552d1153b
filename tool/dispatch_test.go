package tool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
)

// counts counts Finished and Converted calls per call index.
type counts struct {
	mu                  sync.Mutex
	finished, converted map[int]int
}

func (c *counts) hook(d *Dispatcher) {
	c.finished, c.converted = map[int]int{}, map[int]int{}
	d.Finished = func(i int, _ Call, _ time.Duration) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.finished[i]++
	}
	d.Converted = func(i int, _ Call, _ result.Output) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.finished[i] != 1 {
			panic(fmt.Sprintf("call %d converted before it finished", i))
		}
		c.converted[i]++
	}
}

func (c *counts) check(t *testing.T, n int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range n {
		if c.finished[i] != 1 || c.converted[i] != 1 {
			t.Errorf("call %d: finished %d times, converted %d times", i, c.finished[i], c.converted[i])
		}
	}
}

// A round of calls that end every way a call ends: in time, by a panic,
// at a short timeout and at a long one, unknown, refused by its schema.
// Each is finished and converted once, and the handler given up on exits
// once it returns, leaving nothing behind.
func TestEveryCallOfARoundIsFinishedAndConvertedOnceHoweverItEnds(t *testing.T) {
	release := make(chan struct{})
	exited := make(chan struct{})
	ok := MustFunc("ok", "Returns.", func(ctx context.Context, in struct{}) (any, error) { return "ok", nil })
	boom := MustFunc("boom", "Panics.", func(ctx context.Context, in struct{}) (any, error) { panic("boom") })
	short := MustFunc("short", "Outlives its timeout, and returns when released.", func(ctx context.Context, in struct{}) (any, error) {
		defer close(exited)
		<-ctx.Done()
		<-release
		return "late", nil
	})
	short.Timeout = time.Millisecond
	long := MustFunc("long", "Outlives its longer timeout.", func(ctx context.Context, in struct{}) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	long.Timeout = 20 * time.Millisecond
	typed := MustFunc("typed", "Takes a number.", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (any, error) {
		return in.N, nil
	})
	d := dispatcher(t, ok, boom, short, long, typed)
	var c counts
	c.hook(d)
	calls := []Call{{ID: "0", Name: "ok"}, {ID: "1", Name: "boom"}, {ID: "2", Name: "short"}, {ID: "3", Name: "long"},
		{ID: "4", Name: "nope"}, {ID: "5", Name: "typed", Input: []byte(`{"n":"x"}`)}}
	outs := d.Round(context.Background(), calls)
	c.check(t, len(calls))
	for i, want := range []string{"ok", "panicked", "did not finish within 1ms", "", "no tool named", "invalid input"} {
		if !strings.Contains(outs[i].Text, want) || (i != 0) != outs[i].IsError {
			t.Errorf("call %d: %+v, want %q", i, outs[i], want)
		}
	}
	close(release)
	<-exited // the handler given up on returns, and its goroutine with it
}

// A call whose conversion is under way when the round is cancelled keeps
// its result: the round waits for it rather than calling it cancelled.
func TestACancelWhileACallConvertsKeepsThatCallsResult(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	converting := make(chan struct{})
	done := MustFunc("done", "Returns.", func(ctx context.Context, in struct{}) (any, error) { return "done", nil })
	hang := MustFunc("hang", "Waits for the cancel.", func(ctx context.Context, in struct{}) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	d := dispatcher(t, done, hang)
	var c counts
	c.hook(d)
	counted := d.Converted
	d.Converted = func(i int, call Call, out result.Output) {
		if i == 0 {
			close(converting)
			<-ctx.Done() // cancelled while this call converts
		}
		counted(i, call, out)
	}
	go func() {
		<-converting
		cancel()
	}()
	outs := d.Round(ctx, []Call{{ID: "0", Name: "done"}, {ID: "1", Name: "hang"}})
	c.check(t, 2)
	if outs[0].IsError || outs[0].Text != "done" || !outs[1].IsError || !strings.Contains(outs[1].Text, "cancel") {
		t.Fatalf("outputs %+v", outs)
	}
}

// The round gives up on a call no sooner than the deadline its handler's
// context has: a handler that works up to its deadline (and returns what
// it has then) is not cut before it, however long the calls before it in
// the round took to prepare (here the validation of a large input).
func TestARoundGivesUpOnACallNoSoonerThanItsContextsDeadline(t *testing.T) {
	big := MustFunc("big", "Takes a string.", func(ctx context.Context, in struct {
		S string `json:"s"`
	}) (any, error) {
		return len(in.S), nil
	})
	deadlines := make(chan time.Time, 1)
	timed := MustFunc("timed", "Works to its deadline.", func(ctx context.Context, in struct{}) (any, error) {
		deadline, _ := ctx.Deadline()
		deadlines <- deadline
		<-ctx.Done()
		return nil, ctx.Err()
	})
	timed.Timeout = time.Millisecond
	d := dispatcher(t, big, timed)
	var gaveUp time.Time
	d.Finished = func(i int, _ Call, _ time.Duration) {
		if i == 1 {
			gaveUp = time.Now()
		}
	}
	input := `{"s":"` + strings.Repeat("x", 8<<20) + `"}`
	d.Round(context.Background(), []Call{{ID: "0", Name: "big", Input: []byte(input)}, {ID: "1", Name: "timed"}})
	if deadline := <-deadlines; gaveUp.Before(deadline) {
		t.Fatalf("the round gave up on the call %v before its context's deadline", deadline.Sub(gaveUp))
	}
}

// Each call's handler reads its own call's id (CallID); outside a call
// there is none.
func TestAHandlerReadsItsOwnCallsID(t *testing.T) {
	reg := &Registry{}
	if err := reg.Add(MustFunc("id", "Says its call's id.", func(ctx context.Context, _ struct{}) (any, error) { return CallID(ctx), nil })); err != nil {
		t.Fatal(err)
	}
	outs := (&Dispatcher{Tools: reg}).Round(context.Background(), []Call{{ID: "call_a", Name: "id"}, {ID: "call_b", Name: "id"}})
	if outs[0].Text != "call_a" || outs[1].Text != "call_b" {
		t.Fatalf("texts %q, %q; want each call's id", outs[0].Text, outs[1].Text)
	}
	if id := CallID(context.Background()); id != "" {
		t.Fatalf("CallID outside a call = %q", id)
	}
}

// The calls of one round share its Scope, and so does a round run inside
// one of them (a script's calls, a subagent's rounds); two rounds run
// outside any call have two.
func TestTheCallsOfARoundAndWhatTheyRunShareOneScope(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]*Scope{}
	reg := &Registry{}
	inner := &Dispatcher{Tools: reg}
	if err := reg.Add(
		MustFunc("note", "Notes its scope.", func(ctx context.Context, _ struct{}) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			seen[CallID(ctx)] = ScopeOf(ctx)
			return "ok", nil
		}),
		MustFunc("nest", "Runs a round of note inside its call.", func(ctx context.Context, _ struct{}) (any, error) {
			return inner.Round(ctx, []Call{{ID: "nested", Name: "note"}})[0].Text, nil
		}),
	); err != nil {
		t.Fatal(err)
	}
	d := &Dispatcher{Tools: reg}
	d.Round(context.Background(), []Call{{ID: "a", Name: "note"}, {ID: "b", Name: "note"}, {ID: "c", Name: "nest"}})
	d.Round(context.Background(), []Call{{ID: "other", Name: "note"}})
	if seen["a"] == nil || seen["a"] != seen["b"] || seen["a"] != seen["nested"] {
		t.Errorf("scopes a %p, b %p, nested %p: want one, shared by the round's calls and the round inside one", seen["a"], seen["b"], seen["nested"])
	}
	if seen["other"] == nil || seen["other"] == seen["a"] {
		t.Errorf("the second round's scope %p is the first's %p: want one of its own", seen["other"], seen["a"])
	}
	if ScopeOf(context.Background()) != nil {
		t.Error("ScopeOf outside a call is not nil")
	}
	s := seen["a"]
	if v := s.Shared("k", func() any { return 1 }); v != 1 {
		t.Errorf("Shared made %v, want 1", v)
	}
	if v := s.Shared("k", func() any { return 2 }); v != 1 {
		t.Errorf("Shared the second time gave %v, want the first value 1", v)
	}
}

// A handler the round gave up on because the round's context was
// cancelled sees that context's cause (context.Cause), never a bare
// context.Canceled: the round's own end, which ends its calls' contexts,
// came first once in a while, while the cancel was still reaching them,
// and an approval waiting in the call said "the call ended" instead of
// "the turn was cancelled".
func TestAHandlerGivenUpOnByACancelSeesTheCancelsCause(t *testing.T) {
	why := fmt.Errorf("the turn was cancelled")
	for i := range 200 {
		seen := make(chan error, 1)
		started := make(chan struct{})
		d := dispatcher(t, MustFunc("wait", "Waits for its context.", func(ctx context.Context, _ struct{}) (any, error) {
			close(started)
			<-ctx.Done()
			seen <- context.Cause(ctx)
			return nil, ctx.Err()
		}))
		ctx, cancel := context.WithCancelCause(context.Background())
		// other contexts under ctx: its cancel reaches them in the map's
		// order, which leaves the round time to end first
		var stops []context.CancelFunc
		for range 200 {
			_, stop := context.WithCancel(ctx)
			stops = append(stops, stop)
		}
		go func() { <-started; cancel(why) }()
		d.Round(ctx, []Call{{ID: "c", Name: "wait"}})
		for _, stop := range stops {
			stop()
		}
		if got := <-seen; got != why {
			t.Fatalf("run %d: the handler given up on saw the cause %v; want the cancel's (%v)", i, got, why)
		}
	}
}
