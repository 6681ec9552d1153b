package tool

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
)

// goroutine is the running goroutine's number, from its stack's header.
func goroutine() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	return string(bytes.Fields(b)[1])
}

// hereGuarded is d.CallHere, failing the test if it has not returned
// within a minute: a hang guard, far past any timeout the tests set.
func hereGuarded(t *testing.T, d *Dispatcher, ctx context.Context, c Call, until time.Time) result.Output {
	t.Helper()
	done := make(chan result.Output, 1)
	go func() { done <- d.CallHere(ctx, c, until) }()
	select {
	case out := <-done:
		return out
	case <-time.After(time.Minute):
		t.Fatalf("CallHere of %s did not return", c.Name)
		return result.Output{}
	}
}

// A call run here runs its handler on the caller's goroutine, and ends
// every way Call ends it, with the same output: in time, by a panic,
// unknown, refused by its schema; each is finished and converted once.
func TestACallRunHereRunsOnTheCallersGoroutineAndEndsAsCallEndsIt(t *testing.T) {
	ran := make(chan string, 1)
	where := MustFunc("where", "Says where it runs.", func(ctx context.Context, in struct{}) (any, error) {
		ran <- goroutine()
		return "ok", nil
	})
	boom := MustFunc("boom", "Panics.", func(ctx context.Context, in struct{}) (any, error) { panic("boom") })
	typed := MustFunc("typed", "Takes a number.", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (any, error) {
		return in.N, nil
	})
	d := dispatcher(t, where, boom, typed)
	until := time.Now().Add(time.Minute) // before the default timeout ends
	for _, c := range []Call{{ID: "0", Name: "where"}, {ID: "1", Name: "boom"}, {ID: "2", Name: "nope"}, {ID: "3", Name: "typed", Input: []byte(`{"n":"x"}`)}, {ID: "4", Name: "typed", Input: []byte(" null ")}} {
		var cnt counts
		cnt.hook(d)
		want := d.Call(context.Background(), c)
		if c.Name == "where" {
			<-ran
		}
		cnt.hook(d)
		got := d.CallHere(context.Background(), c, until)
		cnt.check(t, 1)
		if c.Name == "where" {
			if g, here := <-ran, goroutine(); g != here {
				t.Errorf("the handler ran on goroutine %s; want the caller's, %s", g, here)
			}
		}
		// a panic's text holds its stack, which differs by its goroutine
		if got.IsError != want.IsError || firstLines(got.Text, 1) != firstLines(want.Text, 1) {
			t.Errorf("call %s here: %+v; want what Call gives: %+v", c.Name, got, want)
		}
	}
}

// A call whose timeout ends before the caller gives up runs as Call runs
// it: its timeout ends it, though its handler ignores its context.
func TestACallWhoseTimeoutEndsFirstIsGivenUpOnAtItsTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stuck := MustFunc("stuck", "Ignores its context.", func(ctx context.Context, in struct{}) (any, error) {
		<-release
		return "late", nil
	})
	stuck.Timeout = 10 * time.Millisecond
	d := dispatcher(t, stuck)
	out := hereGuarded(t, d, context.Background(), Call{ID: "0", Name: "stuck"}, time.Now().Add(time.Hour))
	if !out.IsError || !strings.Contains(out.Text, "did not finish within 10ms") {
		t.Errorf("a stuck call whose timeout ends before its caller gives up: %+v; want it given up on at its timeout", out)
	}
}

// A handler run here gets a context that carries its call's id and cap,
// says when its caller gives up as its deadline, and ends when the call
// returns; a context ended before the call returns gets it the error of
// a cancelled call, and what it returned is discarded (its file removed,
// not converted); a context ended before the call starts keeps it from
// running.
func TestACallRunHereHasItsOwnContextAndIsCancelledWithItsCallers(t *testing.T) {
	var seen context.Context
	look := MustFunc("look", "Keeps its context.", func(ctx context.Context, in struct{}) (any, error) {
		seen = ctx
		return "ok", nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "out")
	spill := MustFunc("spill", "Cancels its caller's context, then returns a file.", func(_ context.Context, in struct{}) (any, error) {
		cancel()
		if err := os.WriteFile(path, []byte("text"), 0o600); err != nil {
			return nil, err
		}
		return result.TextFile{Path: path}, nil
	})
	d := dispatcher(t, look, spill)
	until := time.Now().Add(time.Minute).Truncate(time.Second)
	out := d.CallHere(ctx, Call{ID: "call_x", Name: "look", Cap: 1234}, until)
	if out.Text != "ok" {
		t.Fatalf("the call: %+v", out)
	}
	if dl, ok := seen.Deadline(); !ok || !dl.Equal(until) {
		t.Errorf("the handler's deadline: %v (%v); want when its caller gives up, %v", dl, ok, until)
	}
	if CallID(seen) != "call_x" || CapFrom(seen) != 1234 {
		t.Errorf("the handler's call id %q and cap %d; want call_x and 1234", CallID(seen), CapFrom(seen))
	}
	if seen.Err() == nil || ctx.Err() != nil {
		t.Errorf("once the call returned, its context's error is %v and its caller's %v; want the call's ended alone", seen.Err(), ctx.Err())
	}
	var cnt counts
	cnt.hook(d)
	out = d.CallHere(ctx, Call{ID: "1", Name: "spill"}, until)
	cnt.check(t, 1)
	if !out.IsError || !strings.Contains(out.Text, "cancelled before it finished") {
		t.Errorf("a call whose caller's context ended while it ran: %+v; want it cancelled", out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the file of a result given up on: %v; want it removed", err)
	}
	seen = nil
	cnt.hook(d)
	out = d.CallHere(ctx, Call{ID: "2", Name: "look"}, until)
	cnt.check(t, 1)
	if seen != nil || !out.IsError || !strings.Contains(out.Text, "did not run") {
		t.Errorf("a call whose caller's context ended before it: %+v (ran: %v); want it not started", out, seen != nil)
	}
}

// A zero until is a caller that never gives up: the call is run as Call
// runs it, its own timeout ending it though its handler ignores its
// context — not run here with no end at all, nor with a deadline of the
// zero time.
func TestACallRunHereWithNoUntilIsEndedByItsOwnTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	deadlines := make(chan time.Time, 1)
	stuck := MustFunc("stuck", "Ignores its context.", func(ctx context.Context, in struct{}) (any, error) {
		d, _ := ctx.Deadline()
		deadlines <- d
		<-release
		return "late", nil
	})
	d := dispatcher(t, stuck)
	d.Timeout = 50 * time.Millisecond
	out := hereGuarded(t, d, context.Background(), Call{ID: "1", Name: "stuck"}, time.Time{})
	if !out.IsError || !strings.Contains(out.Text, "did not finish within 50ms") {
		t.Errorf("a stuck call with no until: %q (error %v); want it ended by its timeout", out.Text, out.IsError)
	}
	if deadline := <-deadlines; deadline.IsZero() || time.Until(deadline) < -time.Minute {
		t.Errorf("its handler saw the deadline %v; want its timeout's", deadline)
	}
}
